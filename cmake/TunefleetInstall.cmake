# `cmake --install`: the three programs, the systemd units and the
# sysusers.d file that creates their user, the Prometheus and Grafana files,
# and the docs, in the usual places under CMAKE_INSTALL_PREFIX. The units run
# /usr/bin/...: package with -DCMAKE_INSTALL_PREFIX=/usr.
include(GNUInstallDirs)

install(TARGETS tunefleet-coordinator tunefleet-worker tunectl
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES deploy/systemd/tunefleet-coordinator.service
              deploy/systemd/tunefleet-worker.service
        DESTINATION lib/systemd/system)
install(FILES deploy/sysusers.d/tunefleet.conf DESTINATION lib/sysusers.d)
install(DIRECTORY deploy/prometheus deploy/grafana deploy/k8s
        DESTINATION ${CMAKE_INSTALL_DATADIR}/tunefleet)
install(FILES README.md docs/architecture.md docs/operations.md docs/measurement.md
              docs/kernel-spec.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
