#include "server/lease_receipts.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cstring>
#include <stdexcept>
#include <utility>

namespace tunefleet::server {

namespace {

constexpr size_t kBlock = 64;  // SHA-256's block, in bytes

// A digest context that has absorbed `block`.
EVP_MD_CTX* Absorbed(EVP_MD* md, const unsigned char* block) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (ctx == nullptr || EVP_DigestInit_ex(ctx, md, nullptr) != 1 ||
      EVP_DigestUpdate(ctx, block, kBlock) != 1) {
    throw std::runtime_error("SHA-256 is not available for lease receipts");
  }
  return ctx;
}

}  // namespace

LeaseReceipts::LeaseReceipts(std::string key, uint64_t incarnation)
    : incarnation_(incarnation) {
  sha256_ = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  if (sha256_ == nullptr) throw std::runtime_error("SHA-256 is not available");
  unsigned char padded[kBlock] = {};
  if (key.size() > kBlock) {  // RFC 2104: a longer key is hashed first
    unsigned int length = 0;
    EVP_Digest(key.data(), key.size(), padded, &length, sha256_, nullptr);
  } else {
    std::memcpy(padded, key.data(), key.size());
  }
  unsigned char ipad[kBlock];
  unsigned char opad[kBlock];
  for (size_t i = 0; i < kBlock; ++i) {
    ipad[i] = padded[i] ^ 0x36;
    opad[i] = padded[i] ^ 0x5c;
  }
  inner_ = Absorbed(sha256_, ipad);
  outer_ = Absorbed(sha256_, opad);
}

LeaseReceipts::~LeaseReceipts() {
  EVP_MD_CTX_free(inner_);
  EVP_MD_CTX_free(outer_);
  EVP_MD_free(sha256_);
}

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

std::string LeaseReceipts::Mac(absl::string_view data) const {
  unsigned char inner[EVP_MAX_MD_SIZE];
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int inner_length = 0;
  unsigned int length = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok = ctx != nullptr && EVP_MD_CTX_copy_ex(ctx, inner_) == 1 &&
                  EVP_DigestUpdate(ctx, data.data(), data.size()) == 1 &&
                  EVP_DigestFinal_ex(ctx, inner, &inner_length) == 1 &&
                  EVP_MD_CTX_copy_ex(ctx, outer_) == 1 &&
                  EVP_DigestUpdate(ctx, inner, inner_length) == 1 &&
                  EVP_DigestFinal_ex(ctx, mac, &length) == 1;
  EVP_MD_CTX_free(ctx);
  if (!ok) throw std::runtime_error("SHA-256 failed in a lease receipt's MAC");
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
