// The OpenPGP key-file reader on real Debian archive keys
// (tests/fixtures/openpgp/, fingerprints read with GnuPG: see SOURCES.md).

#include <gtest/gtest.h>

#include "gpuexpand/util/openpgp.hpp"
#include "test_support.hpp"

namespace gpuexpand {
namespace {

std::string key_file(const std::string& name) { return testing::read_source_file("tests/fixtures/openpgp/" + name); }

constexpr const char* kBookworm = "4D64FEC119C2029067D6E791F8D2585B8783D481";
constexpr const char* kBullseye = "A4285295FC7B1A81600062A9605C66F00D6C9793";

TEST(OpenPgp, BinaryEd25519KeyHasGnupgsFingerprint) {
  auto keyring = read_openpgp_keyring(key_file("debian-archive-bookworm-stable.gpg"));
  ASSERT_TRUE(keyring) << keyring.error().message;
  EXPECT_EQ(keyring->fingerprints, std::vector<std::string>{kBookworm});
  EXPECT_EQ(keyring->packets, key_file("debian-archive-bookworm-stable.gpg"));
}

TEST(OpenPgp, OldFormatRsaKeyHasGnupgsFingerprint) {
  auto keyring = read_openpgp_keyring(key_file("debian-archive-bullseye-stable.gpg"));
  ASSERT_TRUE(keyring) << keyring.error().message;
  EXPECT_EQ(keyring->fingerprints, std::vector<std::string>{kBullseye});
}

TEST(OpenPgp, ArmoredKeyIsTheSamePackets) {
  auto armored = read_openpgp_keyring(key_file("debian-archive-bookworm-stable.asc"));
  ASSERT_TRUE(armored) << armored.error().message;
  EXPECT_EQ(armored->fingerprints, std::vector<std::string>{kBookworm});
  EXPECT_EQ(armored->packets, key_file("debian-archive-bookworm-stable.gpg"));
}

// NVIDIA's repository keys, as an operator downloads them: the CUDA
// repository's (RSA 4096, armored, and the binary keyring of NVIDIA's
// cuda-keyring package) and the container toolkit's (a key with an
// expired signing subkey, which is still one key).
TEST(OpenPgp, NvidiaRepositoryKeysHaveGnupgsFingerprints) {
  auto cuda = read_openpgp_keyring(key_file("nvidia-cuda-3bf863cc.asc"));
  ASSERT_TRUE(cuda) << cuda.error().message;
  EXPECT_EQ(cuda->fingerprints, std::vector<std::string>{"EB693B3035CD5710E231E123A4B469963BF863CC"});
  EXPECT_EQ(cuda->packets, key_file("nvidia-cuda-archive-keyring.gpg"));
  auto toolkit = read_openpgp_keyring(key_file("nvidia-container-toolkit.asc"));
  ASSERT_TRUE(toolkit) << toolkit.error().message;
  EXPECT_EQ(toolkit->fingerprints, std::vector<std::string>{"C95B321B61E88C1809C4F759DDCAE044F796ECB0"});
}

TEST(OpenPgp, ArmoringRoundTripsAndMatchesGnupgsBody) {
  const std::string packets = key_file("debian-archive-bookworm-stable.gpg");
  const std::string armored = armor_public_key(packets);
  auto back = read_openpgp_keyring(armored);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->packets, packets);
  // GnuPG 2.2 writes the same base64 lines and CRC-24 (its file has no headers).
  EXPECT_EQ(armored, key_file("debian-archive-bookworm-stable.asc"));
}

TEST(OpenPgp, TwoKeysInOneFileAreBothListed) {
  auto keyring = read_openpgp_keyring(key_file("debian-archive-bookworm-stable.gpg") +
                                      key_file("debian-archive-bullseye-stable.gpg"));
  ASSERT_TRUE(keyring) << keyring.error().message;
  EXPECT_EQ(keyring->fingerprints, (std::vector<std::string>{kBookworm, kBullseye}));
}

TEST(OpenPgp, DamagedFilesAreRefusedWithTheReason) {
  std::string armored = key_file("debian-archive-bookworm-stable.asc");
  const size_t body = armored.find("\n\n") + 2;
  armored[body + 10] = armored[body + 10] == 'A' ? 'B' : 'A';
  auto damaged = read_openpgp_keyring(armored);
  ASSERT_FALSE(damaged);
  EXPECT_NE(damaged.error().message.find("CRC-24"), std::string::npos) << damaged.error().message;

  const std::string binary = key_file("debian-archive-bookworm-stable.gpg");
  auto cut = read_openpgp_keyring(binary.substr(0, binary.size() / 2));
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.error().message.find("truncated"), std::string::npos) << cut.error().message;

  auto text = read_openpgp_keyring("deb http://example.org/ ./\n");
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message.find("not an OpenPGP public key"), std::string::npos) << text.error().message;

  // A secret-key packet (new format, tag 5) must never be shipped to a node.
  auto secret = read_openpgp_keyring(std::string("\xC5\x01\x04", 3));
  ASSERT_FALSE(secret);
  EXPECT_NE(secret.error().message.find("private key"), std::string::npos) << secret.error().message;

  auto signature = read_openpgp_keyring("-----BEGIN PGP SIGNATURE-----\n\nAAAA\n-----END PGP SIGNATURE-----\n");
  ASSERT_FALSE(signature);
  EXPECT_NE(signature.error().message.find("not a public key block"), std::string::npos);
}

TEST(OpenPgp, FingerprintsAreNormalized) {
  EXPECT_EQ(normalize_fingerprint("4d64 fec1 19c2 0290 67d6  e791 f8d2 585b 8783 d481"), kBookworm);
  EXPECT_EQ(normalize_fingerprint("0x4D64FEC119C2029067D6E791F8D2585B8783D481"), kBookworm);
  EXPECT_EQ(normalize_fingerprint("F8D2585B8783D481"), "");  // a long key id is not a fingerprint
  EXPECT_EQ(normalize_fingerprint("4D64FEC119C2029067D6E791F8D2585B8783D48Z"), "");
}

}  // namespace
}  // namespace gpuexpand
