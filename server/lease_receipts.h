// LeaseReceipts: the coordinator's seal over the search leases it grants, so
// that their results outlive the process that granted them.
//
// A lease lives in the memory of the coordinator process that granted it. A
// worker that measured half of a lease when that process died (a restart,
// an upgrade, a standby's takeover) used to have its results refused, and
// the configs were measured again. Every search lease now carries a receipt:
// its grant (v1::LeaseReceiptBody: lease, principal, device, job, key,
// ordinals, time, and the granting process's incarnation) and an
// HMAC-SHA256 of it under a key that the coordinators of one database share
// (Store::Secret). A coordinator that does not know a reported lease opens
// the receipt and adopts the results (JobManager::Report): a worker can
// neither forge a receipt nor alter one (other configs, another job, another
// principal's lease), so it cannot choose which configs it reports.
#ifndef TUNEFLEET_SERVER_LEASE_RECEIPTS_H_
#define TUNEFLEET_SERVER_LEASE_RECEIPTS_H_

#include <openssl/types.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tunefleet/v1/worker_service.pb.h"

namespace tunefleet::server {

// The name of the receipts' key in the store (Store::Secret).
inline constexpr char kLeaseReceiptsSecret[] = "lease-receipts";

// Thread-safety: immutable after construction; safe for concurrent use.
class LeaseReceipts {
 public:
  // `key`: the HMAC key, any length (RFC 2104; the store's is 32 random
  // bytes). `incarnation`: this process's
  // (RandomIncarnation), sealed into every receipt.
  LeaseReceipts(std::string key, uint64_t incarnation);
  ~LeaseReceipts();
  LeaseReceipts(const LeaseReceipts&) = delete;
  LeaseReceipts& operator=(const LeaseReceipts&) = delete;

  // 32 random bytes, for the first coordinator of a database to store.
  static std::string NewKey();
  // A random number for a process's incarnation (never 0).
  static uint64_t RandomIncarnation();

  uint64_t incarnation() const { return incarnation_; }
  // The receipt of `body` (a serialized v1::LeaseReceipt).
  std::string Seal(const v1::LeaseReceiptBody& body) const;
  // The body of `receipt`: InvalidArgument for bytes that are no receipt,
  // PermissionDenied for one not sealed under this key (forged, altered,
  // or another database's).
  absl::StatusOr<v1::LeaseReceiptBody> Open(absl::string_view receipt) const;
  // HMAC-SHA256 (RFC 2104) of `data` under the key. The key's inner and
  // outer blocks are hashed once, at construction, with a SHA-256 fetched
  // once: a call copies those states and fetches nothing (OpenSSL 3's
  // one-shot HMAC looks the digest up, under a global lock, every call).
  std::string Mac(absl::string_view data) const;

 private:
  const uint64_t incarnation_;
  EVP_MD* sha256_ = nullptr;
  EVP_MD_CTX* inner_ = nullptr;  // after (key ^ ipad)
  EVP_MD_CTX* outer_ = nullptr;  // after (key ^ opad)
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_LEASE_RECEIPTS_H_
