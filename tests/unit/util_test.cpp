// Small utilities whose exact behaviour other modules rely on.

#include <gtest/gtest.h>

#include "gpuexpand/util/utf8.hpp"

#include "gpuexpand/spec/yaml_document.hpp"
#include "gpuexpand/util/diagnostic.hpp"
#include "gpuexpand/util/digest.hpp"
#include "gpuexpand/util/shell_quote.hpp"
#include "gpuexpand/util/spellcheck.hpp"

namespace gpuexpand {
namespace {

TEST(ShellQuote, BareWhenSafeQuotedOtherwise) {
  EXPECT_EQ(shell_quote("chrony"), "chrony");
  EXPECT_EQ(shell_quote("/etc/chrony/chrony.conf"), "/etc/chrony/chrony.conf");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("$(reboot)"), "'$(reboot)'");
  EXPECT_EQ(shell_quote("~root"), "'~root'");
  EXPECT_EQ(shell_quote("A=b"), "'A=b'") << "a bare first word would be an assignment";
  EXPECT_EQ(shell_join({"ip", "link", "set", "dev", "eth 1; reboot"}), "ip link set dev 'eth 1; reboot'");
}

TEST(Spellcheck, SuggestsOnlyPlausibleTypos) {
  EXPECT_EQ(closest_match("gpu_drvier", {"gpu_driver", "gpu"}), "gpu_driver");
  EXPECT_EQ(closest_match("becme", {"become", "bastion"}), "become");
  EXPECT_EQ(closest_match("zzzzzz", {"user", "port"}), std::nullopt);
  EXPECT_EQ(closest_match("", {"a"}), std::nullopt);
  EXPECT_EQ(edit_distance("ab", "ba"), 1u) << "a transposition is one edit";
}

TEST(Diagnostic, Rendering) {
  Diagnostic d{{"spec.yaml", 2, 3}, "bad"};
  EXPECT_EQ(d.to_string(), "spec.yaml:2:3: bad");
  EXPECT_EQ(render_with_source(d, "first\n  xbad\n"), "spec.yaml:2:3: bad\n    xbad\n    ^");
  EXPECT_EQ((Diagnostic{{"f", 0, 0}, "m"}).to_string(), "f: m");
}

TEST(Digest, Sha256) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(YamlDocument, PlainScalarsFollowTheCoreSchema) {
  std::vector<Diagnostic> diagnostics;
  auto doc = parse_yaml_document(
      "a: 1\nb: 1.5\nc: true\nd: ~\ne: '1'\nf: 550.90.07\ng: yes\nh: -3\ni: 0x1F\nj: |\n  text\n", "t.yaml", diagnostics);
  ASSERT_TRUE(doc);
  const auto& r = doc->root;
  EXPECT_EQ(r["a"], 1);
  EXPECT_EQ(r["b"], 1.5);
  EXPECT_EQ(r["c"], true);
  EXPECT_TRUE(r["d"].is_null());
  EXPECT_EQ(r["e"], "1") << "quoted stays a string";
  EXPECT_EQ(r["f"], "550.90.07") << "two dots: not a number";
  EXPECT_EQ(r["g"], "yes") << "YAML 1.2: yes is a string";
  EXPECT_EQ(r["h"], -3);
  EXPECT_EQ(r["i"], "0x1F");
  EXPECT_EQ(r["j"], "text\n");
  EXPECT_EQ(doc->key_location("/b").line, 2);
  EXPECT_EQ(doc->value_location("/b").column, 4);
  EXPECT_TRUE(diagnostics.empty());
}

TEST(YamlDocument, PointersAndHumanPaths) {
  EXPECT_EQ(json_pointer_append("/a", "b/c"), "/a/b~1c");
  EXPECT_EQ(human_path("/nodes/3/hosts"), "nodes[3].hosts");
  EXPECT_EQ(human_path("/os/sysctl/net.core.rmem_max"), "os.sysctl.net.core.rmem_max");
  EXPECT_EQ(human_path(""), "(top level)");
}

TEST(YamlDocument, SeveralDocumentsAreAnError) {
  std::vector<Diagnostic> diagnostics;
  auto doc = parse_yaml_document("a: 1\n---\nb: 2\n", "t.yaml", diagnostics);
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].to_string(), "t.yaml:3:1: expected one YAML document, found 2");
}

}  // namespace
}  // namespace gpuexpand

namespace gpuexpand {
namespace {

TEST(Utf8, FirstInvalidByte) {
  EXPECT_EQ(first_invalid_utf8("plain ascii"), std::nullopt);
  EXPECT_EQ(first_invalid_utf8("H200 \xE2\x80\x94 ok \xF0\x9F\x9A\x80"), std::nullopt) << "em dash, 4-byte emoji";
  EXPECT_EQ(first_invalid_utf8("ab\xFE"), 2u);
  EXPECT_EQ(first_invalid_utf8("\xC0\xAF"), 0u) << "overlong '/'";
  EXPECT_EQ(first_invalid_utf8("\xED\xA0\x80"), 0u) << "a surrogate";
  EXPECT_EQ(first_invalid_utf8("x\xE2\x80"), 1u) << "cut short";
  EXPECT_EQ(replace_invalid_utf8("a\xFF" "b\xC3\xA9"), "a\xEF\xBF\xBD" "b\xC3\xA9");
}

}  // namespace
}  // namespace gpuexpand
