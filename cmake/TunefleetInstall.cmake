# `cmake --install`: the programs and the helpers they run, the Python
# package, tunectl's man pages and shell completions, the systemd units and
# the sysusers.d file that creates their user, the Prometheus and Grafana
# files, and the docs, in the usual places under CMAKE_INSTALL_PREFIX. The
# units run /usr/bin/...: package with -DCMAKE_INSTALL_PREFIX=/usr.
# tests/integration/install_test.sh installs into a prefix and starts them.

install(TARGETS tunefleet-coordinator tunefleet-worker tunectl
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The CUDA backend (when built): the worker runs each NVRTC compilation in
# tunefleet-nvrtc, found beside it or in <libexecdir>/tunefleet
# (common/install_layout.h); tunefleet-cuda-trial is a user's tool.
if(TARGET tunefleet-nvrtc)
  install(TARGETS tunefleet-nvrtc
          RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/tunefleet)
  install(TARGETS tunefleet-cuda-trial RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
# The Python package as assembled in the build tree (its generated stubs
# included), into the site directory the prefix's python3 reads; the
# worker's python backend finds it there too.
if(DEFINED TUNEFLEET_PYTHONPATH)
  install(DIRECTORY ${TUNEFLEET_PYTHONPATH}/tunefleet
          DESTINATION ${TUNEFLEET_INSTALL_PYTHONDIR}
          PATTERN __pycache__ EXCLUDE)
endif()
# tunectl's shell completions, written by tunectl itself at build time.
set(TUNECTL_COMPLETIONS ${PROJECT_BINARY_DIR}/completions)
add_custom_command(
  OUTPUT ${TUNECTL_COMPLETIONS}/tunectl ${TUNECTL_COMPLETIONS}/_tunectl
  COMMAND ${CMAKE_COMMAND} -E make_directory ${TUNECTL_COMPLETIONS}
  COMMAND tunectl completion bash > ${TUNECTL_COMPLETIONS}/tunectl
  COMMAND tunectl completion zsh > ${TUNECTL_COMPLETIONS}/_tunectl
  DEPENDS tunectl
  COMMENT "tunectl: shell completions")
add_custom_target(tunectl_completions ALL
  DEPENDS ${TUNECTL_COMPLETIONS}/tunectl ${TUNECTL_COMPLETIONS}/_tunectl)
install(FILES ${TUNECTL_COMPLETIONS}/tunectl
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
install(FILES ${TUNECTL_COMPLETIONS}/_tunectl
        DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
# tunectl.1 (help2man) and a page per verb (tunectl man-pages).
install(DIRECTORY ${PROJECT_BINARY_DIR}/man/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
        FILES_MATCHING PATTERN "*.1")
install(FILES deploy/systemd/tunefleet-coordinator.service
              deploy/systemd/tunefleet-worker.service
        DESTINATION lib/systemd/system)
install(FILES deploy/sysusers.d/tunefleet.conf DESTINATION lib/sysusers.d)
install(DIRECTORY deploy/prometheus deploy/grafana deploy/k8s
        DESTINATION ${CMAKE_INSTALL_DATADIR}/tunefleet)
install(FILES README.md docs/architecture.md docs/operations.md docs/measurement.md
              docs/kernel-spec.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The C++ client library for applications: the public header, the static
# library and the static libraries it links, and a CMake package, so that an
# application writes
#   find_package(tunefleet REQUIRED)
#   target_link_libraries(app PRIVATE tunefleet::client)
# The package finds the Debian packages the library links (gRPC, Protobuf,
# Abseil, OpenSSL, muparser, nlohmann-json) with find_dependency.
include(CMakePackageConfigHelpers)
set(TUNEFLEET_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tunefleet)
foreach(library client common grpc_status grpc_security)
  set_target_properties(${library} PROPERTIES OUTPUT_NAME tunefleet_${library})
endforeach()
install(TARGETS client common grpc_status grpc_security tunefleet_proto
        EXPORT tunefleetTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY client/include/tunefleet DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT tunefleetTargets NAMESPACE tunefleet:: DESTINATION ${TUNEFLEET_CMAKE_DIR})
configure_package_config_file(cmake/tunefleetConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tunefleetConfig.cmake
  INSTALL_DESTINATION ${TUNEFLEET_CMAKE_DIR})
# 0.x: a minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tunefleetConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tunefleetConfig.cmake
              ${PROJECT_BINARY_DIR}/tunefleetConfigVersion.cmake
        DESTINATION ${TUNEFLEET_CMAKE_DIR})
