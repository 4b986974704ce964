// The standard process_* metrics of a Linux process (the names every
// Prometheus client library exports): CPU seconds, resident and virtual
// memory, open and maximum file descriptors, start time. Read from
// /proc/self at every scrape, so they cost nothing between scrapes.
#ifndef TUNEFLEET_COMMON_PROCESS_METRICS_H_
#define TUNEFLEET_COMMON_PROCESS_METRICS_H_

#include <memory>

namespace prometheus {
class Collectable;
}  // namespace prometheus

namespace tunefleet {

// A collectable to register with an Exposer next to the process's own
// registry. Thread-safety: Collect may run on any thread.
std::shared_ptr<prometheus::Collectable> MakeProcessMetrics();

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_PROCESS_METRICS_H_
