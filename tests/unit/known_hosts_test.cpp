// KnownHosts (include/gpuexpand/transport/known_hosts.hpp): which entries
// a host's lookup finds. Entries listing plain names are found through an
// index, the others by matching each in turn; both must give what
// OpenSSH's rules give, in file order.

#include "gpuexpand/transport/known_hosts.hpp"

#include <gtest/gtest.h>

#include "gpuexpand/util/base64.hpp"

namespace gpuexpand {
namespace {

std::string line(const std::string& hosts, const std::string& blob, const std::string& type = "ssh-ed25519") {
  return hosts + " " + type + " " + base64_encode(blob) + "\n";
}

std::vector<int> lines_for(const KnownHosts& known, const std::string& host, int port = 22) {
  std::vector<int> lines;
  for (const auto* entry : known.entries_for(host, port)) lines.push_back(entry->line);
  return lines;
}

TEST(KnownHosts, PlainNamesPatternsAndPortsInFileOrder) {
  const KnownHosts known = KnownHosts::parse(line("node-01,10.0.0.1", "k1") +     // 1
                                             line("gpu-*", "k2") +                 // 2
                                             line("Node-01", "k3") +               // 3: case does not matter
                                             line("[node-01]:2222", "k4") +        // 4
                                             line("node-0?,!node-02", "k5") +      // 5
                                             line("node-010", "k6") +              // 6
                                             line("*", "k7"));                     // 7
  EXPECT_EQ(lines_for(known, "node-01"), (std::vector<int>{1, 3, 5, 7}));
  EXPECT_EQ(lines_for(known, "NODE-01"), (std::vector<int>{1, 3, 5, 7}));
  EXPECT_EQ(lines_for(known, "10.0.0.1"), (std::vector<int>{1, 7}));
  EXPECT_EQ(lines_for(known, "node-02"), (std::vector<int>{7}));  // !node-02 vetoes line 5
  EXPECT_EQ(lines_for(known, "node-01", 2222), (std::vector<int>{4, 7}));
  EXPECT_EQ(lines_for(known, "gpu-17"), (std::vector<int>{2, 7}));
  EXPECT_EQ(lines_for(known, "node-010"), (std::vector<int>{6, 7}));
}

TEST(KnownHosts, ChecksAgainstEveryEntryForTheHost) {
  const KnownHosts known = KnownHosts::parse(line("node-01", "old") + line("@revoked node-01", "bad") +
                                             line("node-*", "new"));
  EXPECT_EQ(known.check("node-01", 22, "ssh-ed25519", "new").verdict, HostKeyVerdict::Match);
  EXPECT_EQ(known.check("node-01", 22, "ssh-ed25519", "old").verdict, HostKeyVerdict::Match);
  EXPECT_EQ(known.check("node-01", 22, "ssh-ed25519", "bad").verdict, HostKeyVerdict::Revoked);
  EXPECT_EQ(known.check("node-01", 22, "ssh-ed25519", "other").verdict, HostKeyVerdict::Changed);
  EXPECT_EQ(known.check("other", 22, "ssh-ed25519", "new").verdict, HostKeyVerdict::Unknown);
  EXPECT_EQ(known.key_types_for("node-01", 22), (std::vector<std::string>{"ssh-ed25519"}));
}

TEST(KnownHosts, AThousandHostsEachFindOnlyTheirOwnEntry) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += line("[127.1." + std::to_string(i / 250) + "." + std::to_string(i % 250) + "]:2200",
                                             "key" + std::to_string(i));
  const KnownHosts known = KnownHosts::parse(text);
  for (int i = 0; i < 1000; i += 97) {
    const auto found = known.entries_for("127.1." + std::to_string(i / 250) + "." + std::to_string(i % 250), 2200);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0]->line, i + 1);
    EXPECT_EQ(found[0]->key_blob, "key" + std::to_string(i));
  }
}

}  // namespace
}  // namespace gpuexpand
