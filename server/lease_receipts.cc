#include "server/lease_receipts.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstring>
#include <stdexcept>
#include <utility>

namespace tunefleet::server {

LeaseReceipts::LeaseReceipts(std::string key, uint64_t incarnation)
    : key_(std::move(key)), incarnation_(incarnation) {}

std::string LeaseReceipts::NewKey() {
  std::string key(32, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(key.data()), static_cast<int>(key.size())) !=
      1) {
    throw std::runtime_error("RAND_bytes failed: no random key for lease receipts");
  }
  return key;
}

uint64_t LeaseReceipts::RandomIncarnation() {
  uint64_t incarnation = 0;
  while (incarnation == 0) {
    if (RAND_bytes(reinterpret_cast<unsigned char*>(&incarnation), sizeof(incarnation)) != 1) {
      throw std::runtime_error("RAND_bytes failed: no incarnation");
    }
  }
  return incarnation;
}

std::string LeaseReceipts::Mac(absl::string_view body) const {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
       reinterpret_cast<const unsigned char*>(body.data()), body.size(), mac, &length);
  return std::string(reinterpret_cast<const char*>(mac), length);
}

std::string LeaseReceipts::Seal(const v1::LeaseReceiptBody& body) const {
  v1::LeaseReceipt receipt;
  receipt.set_body(body.SerializeAsString());
  receipt.set_mac(Mac(receipt.body()));
  return receipt.SerializeAsString();
}

absl::StatusOr<v1::LeaseReceiptBody> LeaseReceipts::Open(absl::string_view bytes) const {
  v1::LeaseReceipt receipt;
  if (!receipt.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError("the lease receipt is not one");
  }
  const std::string mac = Mac(receipt.body());
  // Compared in constant time: the time taken says nothing of the MAC.
  if (receipt.mac().size() != mac.size() ||
      CRYPTO_memcmp(receipt.mac().data(), mac.data(), mac.size()) != 0) {
    return absl::PermissionDeniedError(
        "the lease receipt was not sealed by a coordinator of this database");
  }
  v1::LeaseReceiptBody body;
  if (!body.ParseFromString(receipt.body())) {
    return absl::InvalidArgumentError("the lease receipt's body is not one");
  }
  return body;
}

}  // namespace tunefleet::server
