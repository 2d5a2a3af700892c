#include "gpuexpand/playbook/expression.hpp"

#include <gtest/gtest.h>

#include <string>

namespace gpuexpand {
namespace {

using json = nlohmann::json;

const json kVars = json::parse(R"({
  "gpu": {"vendor": "nvidia", "count": 8, "driver_version": "535.129.03", "mig": false,
          "models": ["H100", "A100"], "ratio": 0.5},
  "node": {"name": "gpu-01", "labels": {"zone": "a"}, "gpu-count": 4},
  "os": {"family": "debian", "version": "12"},
  "empty_list": [], "empty_object": {}, "zero": 0, "zero_float": 0.0, "empty_string": "",
  "nothing": null, "yes": true
})");

bool eval(std::string_view condition, const json& vars = kVars) {
  auto r = evaluate_condition(condition, vars);
  EXPECT_TRUE(r.ok()) << condition << ": " << (r.ok() ? "" : r.error().message);
  return r.ok() && *r;
}

std::string eval_error(std::string_view condition, const json& vars = kVars) {
  auto r = evaluate_condition(condition, vars);
  EXPECT_FALSE(r.ok()) << condition << " evaluated to " << (r.ok() && *r);
  return r.ok() ? "" : r.error().message;
}

TEST(Condition, Truthiness) {
  for (const char* falsy : {"nothing", "false", "zero", "zero_float", "empty_string", "empty_list",
                            "empty_object", "gpu.mig", "null", "0", "''"}) {
    EXPECT_FALSE(eval(falsy)) << falsy;
  }
  for (const char* truthy : {"yes", "true", "gpu.count", "gpu.ratio", "gpu.vendor", "gpu.models",
                             "node.labels", "1", "-1", "'x'", "[0]"}) {
    EXPECT_TRUE(eval(truthy)) << truthy;
  }
}

TEST(Condition, MissingPathsAreNull) {
  EXPECT_FALSE(eval("gpu.firmware"));
  EXPECT_FALSE(eval("nosuch.deeply.nested[3]"));
  EXPECT_TRUE(eval("gpu.firmware == null"));
  EXPECT_TRUE(eval("not gpu.firmware"));
  EXPECT_TRUE(eval("node.name.first == null"));  // through a string
  EXPECT_TRUE(eval("gpu.models[5] == null"));
  EXPECT_TRUE(eval("gpu.models.first == null"));
  EXPECT_TRUE(eval("gpu.count[0] == null"));
  EXPECT_TRUE(eval("gpu.firmware != 'x'"));
}

TEST(Condition, Paths) {
  EXPECT_TRUE(eval("gpu.models[1] == 'A100'"));
  EXPECT_TRUE(eval("node.labels['zone'] == \"a\""));
  EXPECT_TRUE(eval("node.gpu-count == 4"));
  EXPECT_TRUE(eval("gpu['vendor'] == 'nvidia'"));
  const json keyword_keys = json::parse(R"({"x": {"in": 1, "not": 2, "true": 3}})");
  EXPECT_TRUE(eval("x.in == 1 and x.not == 2 and x.true == 3", keyword_keys));
}

TEST(Condition, Precedence) {
  EXPECT_FALSE(eval("not false and false"));  // (not false) and false
  EXPECT_TRUE(eval("not (false and false)"));
  EXPECT_TRUE(eval("true or false and false"));  // true or (false and false)
  EXPECT_FALSE(eval("(true or false) and false"));
  EXPECT_TRUE(eval("false and false or true"));
  EXPECT_FALSE(eval("not gpu.count == 8"));  // not (gpu.count == 8)
  EXPECT_TRUE(eval("not not true"));
  EXPECT_TRUE(eval("not gpu.mig and gpu.count > 4 and gpu.vendor == 'nvidia'"));
  EXPECT_TRUE(eval("gpu.vendor == 'amd' or gpu.vendor == 'nvidia'"));
  EXPECT_TRUE(eval("((((true))))"));
}

TEST(Condition, AndOrShortCircuit) {
  // The right side would be an error if evaluated.
  EXPECT_FALSE(eval("gpu.firmware and gpu.firmware < '550'"));
  EXPECT_TRUE(eval("not gpu.firmware or gpu.firmware < '550'"));
  EXPECT_TRUE(eval("gpu.driver_version and gpu.driver_version < '550'"));
}

TEST(Condition, Equality) {
  EXPECT_TRUE(eval("gpu.count == 8"));
  EXPECT_TRUE(eval("gpu.count == 8.0"));
  EXPECT_FALSE(eval("gpu.count == '8'"));  // a number is not a numeric string
  EXPECT_TRUE(eval("gpu.count != '8'"));
  EXPECT_TRUE(eval("os.version == '12'"));
  EXPECT_FALSE(eval("os.version == 12"));
  EXPECT_TRUE(eval("gpu.models == ['H100', 'A100']"));
  EXPECT_TRUE(eval("empty_list == []"));
  EXPECT_TRUE(eval("gpu.mig == false and yes == true and nothing == null"));
  EXPECT_FALSE(eval("zero == false"));
}

TEST(Condition, Ordering) {
  EXPECT_TRUE(eval("gpu.count > 4"));
  EXPECT_TRUE(eval("gpu.count >= 8"));
  EXPECT_TRUE(eval("gpu.count <= 8"));
  EXPECT_FALSE(eval("gpu.count < 8"));
  EXPECT_TRUE(eval("gpu.ratio < 1"));
  EXPECT_TRUE(eval("-2 < -1.5"));
  EXPECT_TRUE(eval("'abc' < 'abd'"));
  EXPECT_TRUE(eval("'10a' < '9a'"));  // not versions: bytewise
  EXPECT_TRUE(eval("'Z' < 'a'"));
}

TEST(Condition, Versions) {
  EXPECT_TRUE(eval("gpu.driver_version < '550.90.07'"));
  EXPECT_TRUE(eval("'535.129.03' < '550.90.07'"));
  EXPECT_TRUE(eval("'550.9' < '550.10'"));
  EXPECT_TRUE(eval("'9' < '10'"));
  EXPECT_TRUE(eval("'550.90.07' > '550.90'"));
  EXPECT_TRUE(eval("'550' <= '550.0' and '550' >= '550.0'"));
  EXPECT_FALSE(eval("'550' == '550.0'"));  // == is exact, only ordering knows versions
  EXPECT_TRUE(eval("gpu.driver_version >= '535.129.3'"));

  EXPECT_LT(compare_versions("535.129.03", "550.90.07"), 0);
  EXPECT_LT(compare_versions("550.9", "550.10"), 0);
  EXPECT_GT(compare_versions("550.10", "550.9"), 0);
  EXPECT_EQ(compare_versions("550.03", "550.3"), 0);
  EXPECT_EQ(compare_versions("550", "550.0.0"), 0);
  EXPECT_LT(compare_versions("550", "550.0.1"), 0);
  EXPECT_EQ(compare_versions("", ""), 0);
  EXPECT_LT(compare_versions("12.2", "12.2-rc1"), 0);
  EXPECT_LT(compare_versions("12.2-rc1", "12.3"), 0);
  EXPECT_LT(compare_versions("99999999999999999999999", "100000000000000000000000"), 0);
}

TEST(Condition, In) {
  EXPECT_TRUE(eval("'H100' in gpu.models"));
  EXPECT_FALSE(eval("'V100' in gpu.models"));
  EXPECT_TRUE(eval("'V100' not in gpu.models"));
  EXPECT_TRUE(eval("'vid' in gpu.vendor"));
  EXPECT_TRUE(eval("'' in gpu.vendor"));
  EXPECT_FALSE(eval("'amd' in gpu.vendor"));
  EXPECT_TRUE(eval("'zone' in node.labels"));
  EXPECT_TRUE(eval("'rack' not in node.labels"));
  EXPECT_TRUE(eval("gpu.vendor in ['nvidia', 'amd']"));
  EXPECT_TRUE(eval("gpu.count in [1, 8]"));
  EXPECT_FALSE(eval("gpu.count in ['8']"));
  EXPECT_FALSE(eval("'x' in []"));
  EXPECT_FALSE(eval("'x' in gpu.firmware"));  // absent optional list holds nothing
  EXPECT_TRUE(eval("'x' not in gpu.firmware"));
  EXPECT_TRUE(eval("not 'x' in gpu.models"));
}

TEST(ConditionErrors, Syntax) {
  EXPECT_EQ(eval_error("a == == x"), "unexpected '==' at offset 5 in condition 'a == == x'");
  EXPECT_EQ(eval_error("a == 'x"), "unterminated string at offset 5 in condition 'a == 'x'");
  EXPECT_EQ(eval_error(""), "empty condition");
  EXPECT_EQ(eval_error(" \t\n"), "empty condition");
  EXPECT_EQ(eval_error("a =="), "unexpected end of condition at offset 4 in condition 'a =='");
  EXPECT_EQ(eval_error("(a or b"),
            "unexpected end of condition at offset 7 in condition '(a or b'");
  EXPECT_EQ(eval_error("a)"), "unexpected ')' at offset 1 in condition 'a)'");
  EXPECT_EQ(eval_error("a b"), "unexpected 'b' at offset 2 in condition 'a b'");
  EXPECT_EQ(eval_error("a 'b'"), "unexpected string 'b' at offset 2 in condition 'a 'b''");
  EXPECT_EQ(eval_error("a < b < c"), "unexpected '<' at offset 6 in condition 'a < b < c'");
  EXPECT_EQ(eval_error("and a"), "unexpected 'and' at offset 0 in condition 'and a'");
  EXPECT_EQ(eval_error("a and"), "unexpected end of condition at offset 5 in condition 'a and'");
  EXPECT_EQ(eval_error("a not b"), "unexpected 'not' at offset 2 in condition 'a not b'");
  EXPECT_EQ(eval_error("a."), "unexpected end of condition at offset 2 in condition 'a.'");
  EXPECT_EQ(eval_error("a[-1]"), "unexpected '-1' at offset 2 in condition 'a[-1]'");
  EXPECT_EQ(eval_error("a[1.5]"), "unexpected '1.5' at offset 2 in condition 'a[1.5]'");
  EXPECT_EQ(eval_error("a in [b]"), "unexpected 'b' at offset 6 in condition 'a in [b]'");
  EXPECT_EQ(eval_error("a in [1 2]"), "unexpected '2' at offset 8 in condition 'a in [1 2]'");
  EXPECT_EQ(eval_error("a && b"), "unexpected '&&' at offset 2 in condition 'a && b' (use 'and')");
  EXPECT_EQ(eval_error("a || b"), "unexpected '||' at offset 2 in condition 'a || b' (use 'or')");
  EXPECT_EQ(eval_error("!a"), "unexpected '!' at offset 0 in condition '!a' (use 'not')");
  EXPECT_EQ(eval_error("a = 1"), "unexpected '=' at offset 2 in condition 'a = 1' (use '==')");
  EXPECT_EQ(eval_error("a + 1"), "unexpected '+' at offset 2 in condition 'a + 1'");
  EXPECT_EQ(
      eval_error("gpu.driver_version < 535.129.03"),
      "malformed number '535.129.03' at offset 21 in condition 'gpu.driver_version < 535.129.03' "
      "(quote versions: '535.129.03')");
  EXPECT_EQ(eval_error("x == 12abc"),
            "malformed number '12abc' at offset 5 in condition 'x == 12abc'");
}

TEST(ConditionErrors, NestingIsBounded) {
  EXPECT_TRUE(eval(std::string(60, '(') + "true" + std::string(60, ')')));
  const std::string deep = std::string(100000, '(') + "true" + std::string(100000, ')');
  auto r = evaluate_condition(deep, kVars);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.substr(0, 52),
            "condition nests too deeply at offset 64 in condition");
  std::string many_nots;
  for (int i = 0; i < 70; ++i) many_nots += "not ";
  EXPECT_EQ(eval_error(many_nots + "true"),
            "condition nests too deeply at offset 256 in condition '" + many_nots + "true'");
}

TEST(ConditionErrors, Types) {
  EXPECT_EQ(eval_error("gpu.count < '8'"),
            "cannot compare number with string in condition 'gpu.count < '8''");
  EXPECT_EQ(eval_error("gpu.firmware < '550'"),
            "cannot compare null with string in condition 'gpu.firmware < '550''");
  EXPECT_EQ(eval_error("gpu.mig < true"),
            "cannot order bool values with '<' in condition 'gpu.mig < true'");
  EXPECT_EQ(eval_error("gpu.models >= []"),
            "cannot order list values with '>=' in condition 'gpu.models >= []'");
  EXPECT_EQ(eval_error("'8' in gpu.count"),
            "'in' needs a list, string or object on the right, got number in condition ''8' in "
            "gpu.count'");
  EXPECT_EQ(eval_error("8 not in gpu.vendor"),
            "'not in' needs a string on the left of a string, got number in condition '8 not in "
            "gpu.vendor'");
  EXPECT_EQ(
      eval_error("1 in node.labels"),
      "'in' needs a string on the left of an object, got number in condition '1 in node.labels'");
}

TEST(ConditionSyntax, ChecksWithoutVariables) {
  EXPECT_TRUE(check_condition_syntax("gpu.vendor == 'nvidia' and gpu.count < 'x'")
                  .ok());  // types need values
  EXPECT_TRUE(check_condition_syntax("not (a in ['x', 1, true, null, -2.5]) or b not in c").ok());
  auto bad = check_condition_syntax("a == == x");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "unexpected '==' at offset 5 in condition 'a == == x'");
  auto empty = check_condition_syntax("");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().message, "empty condition");
}


// Before the facts are in: a condition that short-circuits before it reads
// them has a value; one that needs them does not.
TEST(Condition, WithoutARoot) {
  const json vars = {{"item", {{"name", "eth1"}}}, {"facts", {{"os", {{"family", "rhel"}}}}}};
  EXPECT_EQ(evaluate_condition_without("item.address and facts.os.family == 'rhel'", vars, "facts").value(), false);
  EXPECT_EQ(evaluate_condition_without("item.name or facts.os.family == 'rhel'", vars, "facts").value(), true);
  auto unknown = evaluate_condition_without("item.name and facts.os.family == 'rhel'", vars, "facts");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().message, "'facts' is not known yet in condition 'item.name and facts.os.family == 'rhel''");
  EXPECT_FALSE(evaluate_condition_without("not facts.x", vars, "facts"));
  EXPECT_EQ(evaluate_condition_without("gres_from_facts", {{"gres_from_facts", true}}, "facts").value(), true)
      << "only the root itself";
}

}  // namespace
}  // namespace gpuexpand
