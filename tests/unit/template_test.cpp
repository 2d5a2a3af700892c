#include "gpuexpand/playbook/template.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace gpuexpand {
namespace {

using json = nlohmann::json;

const json kVars = json::parse(R"({
  "node": {"name": "gpu-01", "address": "10.0.0.7"},
  "gpu": {"count": 8, "mig": false, "driver_version": "535.129.03", "ratio": 2.5},
  "os": {
    "ntp_servers": ["ntp1.example.com", "ntp2.example.com"],
    "sysctl": {"net.ipv4.ip_forward": 1, "vm.swappiness": "10"},
    "proxy": null
  },
  "scheduler": {"slurm": null},
  "tags": [],
  "mixed": ["a", {"b": 1}],
  "word": "MiXeD",
  "limits": [{"domain": "*", "type": "soft", "item": "memlock", "value": "unlimited"},
             {"domain": "*", "type": "-", "item": "nofile", "value": 1048576}]
})");

std::string render_ok(std::string_view text, TemplateContext context, const json& vars = kVars) {
  auto r = render_template(text, vars, context);
  EXPECT_TRUE(r.ok()) << text << " -> " << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : "";
}

std::string render_error(std::string_view text, TemplateContext context, const json& vars = kVars) {
  auto r = render_template(text, vars, context);
  EXPECT_FALSE(r.ok()) << text << " rendered as " << (r.ok() ? *r : "");
  return r.ok() ? "" : r.error().message;
}

std::string text(std::string_view t) { return render_ok(t, TemplateContext::Text); }
std::string shell(std::string_view t) { return render_ok(t, TemplateContext::Shell); }
std::string text_error(std::string_view t) { return render_error(t, TemplateContext::Text); }
std::string shell_error(std::string_view t) { return render_error(t, TemplateContext::Shell); }

// Runs `command` with /bin/sh -c and returns its stdout byte for byte. The
// child runs in a fresh empty directory with PATH pointing nowhere, so if
// quoting ever broke, an injected external command (rm, touch) could not run;
// printf and set are builtins and still work, and the output check catches
// the broken quoting.
std::string run_sh(const std::string& command) {
  char dir[] = "/tmp/template_test_XXXXXX";
  if (!mkdtemp(dir)) return "<mkdtemp failed>";
  int fds[2];
  if (pipe(fds) != 0) return "<pipe failed>";
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    if (chdir(dir) != 0) _exit(126);
    char* const argv[] = {const_cast<char*>("sh"), const_cast<char*>("-c"),
                          const_cast<char*>(command.c_str()), nullptr};
    char* const envp[] = {const_cast<char*>("PATH=/nonexistent"), nullptr};
    execve("/bin/sh", argv, envp);
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = read(fds[0], buffer, sizeof buffer)) > 0)
    out.append(buffer, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  rmdir(dir);  // fails, and the test notices below, if anything was created
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    out += "<exit status " + std::to_string(status) + ">";
  return out;
}

const std::vector<std::string> kNastyValues = {
    "it's",
    "'",
    "''",
    "'\\''",
    "; rm -rf /",
    "$(rm -rf /)",
    "`rm -rf /`",
    "$(echo INJECTED)",
    "a\nb",
    "\n",
    "line\n; echo INJECTED",
    "back\\slash",
    "\\",
    "\\\\n",
    "say \"hi\"",
    "\"",
    "*",
    "/*",
    "[a-z]*",
    "?",
    "-n",
    "--help",
    "-",
    "~",
    "~root",
    "~/x",
    "",
    " ",
    "a  b\tc",
    "$HOME",
    "${HOME}",
    "$((1+1))",
    "&& echo INJECTED",
    "| echo INJECTED",
    "> out",
    "#not a comment",
    "a=b",
    "{{ node.name }}",
    "!",
    "%s%n",
    "\xff\xfe bytes",
    "{a,b}",
    "$'\\x41'",
    "<<EOF",
};

TEST(TemplateSecurity, EveryNastyValueIsOneInertShellWord) {
  for (const std::string& value : kNastyValues) {
    const json vars = {{"v", value}};
    auto rendered = render_template("printf '%s\\n' {{ v }}", vars, TemplateContext::Shell);
    ASSERT_TRUE(rendered.ok()) << rendered.error().message;
    EXPECT_EQ(run_sh(*rendered), value + "\n") << "command: " << *rendered;

    // Exactly one argument, whatever the value.
    auto counted =
        render_template("set -- {{ v }}; printf '%s\\n' \"$#\"", vars, TemplateContext::Shell);
    ASSERT_TRUE(counted.ok()) << counted.error().message;
    EXPECT_EQ(run_sh(*counted), "1\n") << "command: " << *counted;
  }
}

TEST(TemplateSecurity, ListOfNastyValuesIsOneWordPerElement) {
  const json vars = {{"list", kNastyValues}};
  auto rendered = render_template("printf '%s\\n' {{ list }}", vars, TemplateContext::Shell);
  ASSERT_TRUE(rendered.ok()) << rendered.error().message;
  std::string expected;
  for (const std::string& value : kNastyValues) expected += value + "\n";
  EXPECT_EQ(run_sh(*rendered), expected);

  auto counted =
      render_template("set -- {{ list }}; printf '%s' \"$#\"", vars, TemplateContext::Shell);
  ASSERT_TRUE(counted.ok());
  EXPECT_EQ(run_sh(*counted), std::to_string(kNastyValues.size()));
}

TEST(TemplateSecurity, NastyValuesThroughFiltersStayInert) {
  const json vars = {{"list", kNastyValues}, {"map", {{"k';x", "$(echo INJECTED)"}}}};
  std::string joined;
  std::string lines;
  for (std::size_t i = 0; i < kNastyValues.size(); ++i) {
    joined += (i ? "," : "") + kNastyValues[i];
    lines += (i ? "\n" : "") + ("- " + kNastyValues[i]);
  }
  auto r = render_template("printf '%s' {{ list|join(',') }}", vars, TemplateContext::Shell);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(run_sh(*r), joined);
  r = render_template("printf '%s' {{ list|lines('- {}') }}", vars, TemplateContext::Shell);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(run_sh(*r), lines);
  r = render_template("printf '%s' {{ map|lines('{key}={value}') }}", vars, TemplateContext::Shell);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(run_sh(*r), "k';x=$(echo INJECTED)");
}

TEST(TemplateSecurity, EmptyStringIsOneEmptyArgument) {
  const json vars = {{"v", ""}};
  EXPECT_EQ(render_ok("{{ v }}", TemplateContext::Shell, vars), "''");
  EXPECT_EQ(run_sh(render_ok("printf '%s|' {{ v }} x", TemplateContext::Shell, vars)), "|x|");
}

TEST(TemplateSecurity, RenderedValuesAreNeverExpandedAgain) {
  const json vars = {{"v", "{{ secret }}"}, {"secret", "s3cr3t"}};
  EXPECT_EQ(render_ok("{{ v }}", TemplateContext::Text, vars), "{{ secret }}");
  EXPECT_EQ(render_ok("{{ v }}", TemplateContext::Shell, vars), "'{{ secret }}'");
}

TEST(TemplateSecurity, PlaceholdersWhereQuotingWouldNotHoldAreRejected) {
  const std::string tail =
      " in a shell command, where a quoted value would not stay one inert word";
  EXPECT_EQ(shell_error("echo '{{ node.name }}'"),
            "'{{' at offset 6 is inside single quotes" + tail);
  EXPECT_EQ(shell_error("echo \"x {{ node.name }}\""),
            "'{{' at offset 8 is inside double quotes" + tail);
  EXPECT_EQ(shell_error("echo `echo {{ node.name }}`"),
            "'{{' at offset 11 is inside backquotes" + tail);
  EXPECT_EQ(shell_error("echo ${X:-{{ node.name }}}"), "'{{' at offset 10 is inside ${...}" + tail);
  EXPECT_EQ(shell_error("echo $(( {{ gpu.count }} + 1 ))"),
            "'{{' at offset 9 is inside an arithmetic expression" + tail);
  EXPECT_EQ(shell_error("echo $'a\\' {{ node.name }}'"),
            "'{{' at offset 11 is inside single quotes" + tail);
  EXPECT_EQ(shell_error("true # {{ node.name }}"), "'{{' at offset 7 is inside a comment" + tail);
  EXPECT_EQ(shell_error("echo \\{{ node.name }}"),
            "'{{' at offset 6 is right after a backslash" + tail);
  EXPECT_EQ(shell_error("cat <<EOF\n{{ node.name }}\nEOF"),
            "'{{' at offset 10 is after a here-document operator '<<'" + tail);
  EXPECT_EQ(shell_error("cat <<{{ node.name }}"),
            "'{{' at offset 6 is after a here-document operator '<<'" + tail);
  // $'…' is ANSI-C quoting in bash: a value with \' would break out.
  EXPECT_EQ(shell_error("printf '%s' ${{ node.name }}"), "'{{' at offset 13 is right after '$'" + tail);
}

TEST(TemplateSecurity, PlaceholdersWhereABareWordCanStandAreAccepted) {
  EXPECT_EQ(shell("echo 'quoted' {{ node.name }} \"x\" {{ node.name }}"),
            "echo 'quoted' gpu-01 \"x\" gpu-01");
  EXPECT_EQ(shell("echo \"$(hostname {{ node.name }})\""), "echo \"$(hostname gpu-01)\"");
  EXPECT_EQ(shell("echo a#b {{ node.name }}"), "echo a#b gpu-01");
  EXPECT_EQ(shell("true # note\necho {{ node.name }}"), "true # note\necho gpu-01");
  EXPECT_EQ(shell("echo \\\\ {{ node.name }}"), "echo \\\\ gpu-01");
  EXPECT_EQ(shell("cat <<< {{ node.name }}"), "cat <<< gpu-01");
  EXPECT_EQ(shell("--name={{ node.name }}.local"), "--name=gpu-01.local");
  EXPECT_EQ(shell("echo ${HOME} {{ node.name }}"), "echo ${HOME} gpu-01");
  // Text context has no shell rules.
  EXPECT_EQ(text("name = \"{{ node.name }}\""), "name = \"gpu-01\"");
}

TEST(Template, PathsAndScalarsInText) {
  EXPECT_EQ(text("host {{ node.name }} at {{node.address}}"), "host gpu-01 at 10.0.0.7");
  EXPECT_EQ(text("{{   gpu.count   }} {{ gpu.mig }} {{ gpu.ratio }}"), "8 false 2.5");
  EXPECT_EQ(text("server {{ os.ntp_servers[1] }}"), "server ntp2.example.com");
  EXPECT_EQ(text("{{ os.sysctl['net.ipv4.ip_forward'] }} {{ os.sysctl[\"vm.swappiness\"] }}"),
            "1 10");
  EXPECT_EQ(text("no placeholders } { }}"), "no placeholders } { }}");
  EXPECT_EQ(text(""), "");
}

TEST(Template, LiteralExpressions) {
  EXPECT_EQ(text("{{ '{{' }} not a placeholder }}"), "{{ not a placeholder }}");
  EXPECT_EQ(text("{{ \"}}\" }}"), "}}");
  EXPECT_EQ(text("{{ \"it's\" }} {{ 'say \"hi\"' }}"), "it's say \"hi\"");
}

TEST(Template, ShellValues) {
  EXPECT_EQ(shell("hostnamectl set-hostname {{ node.name }}"), "hostnamectl set-hostname gpu-01");
  EXPECT_EQ(shell("echo {{ gpu.count }} {{ gpu.mig }}"), "echo 8 false");
  EXPECT_EQ(shell("chronyc add {{ os.ntp_servers }}"),
            "chronyc add ntp1.example.com ntp2.example.com");
  EXPECT_EQ(shell("apt-get install {{ tags }}"), "apt-get install ");
  EXPECT_EQ(shell("echo {{ '{{' }}"), "echo '{{'");
  EXPECT_EQ(shell("printf '%s' {{ os.ntp_servers|lines('server {} iburst') }}"),
            "printf '%s' 'server ntp1.example.com iburst\nserver ntp2.example.com iburst'");
}

TEST(Template, Filters) {
  EXPECT_EQ(text("{{ node.missing|default('none') }}"), "none");
  EXPECT_EQ(text("{{ os.proxy|default('direct') }}"), "direct");
  EXPECT_EQ(text("{{ scheduler.slurm.features|default(\"\") }}"), "");
  EXPECT_EQ(text("{{ os.ntp_servers[9]|default(0) }}"), "0");
  EXPECT_EQ(text("{{ node.name|default('x') }}"), "gpu-01");
  EXPECT_EQ(text("{{ os.ntp_servers|join(', ') }}"), "ntp1.example.com, ntp2.example.com");
  EXPECT_EQ(text("{{ tags|join(',') }}"), "");
  EXPECT_EQ(text("{{ os.ntp_servers|lines('server {} iburst') }}"),
            "server ntp1.example.com iburst\nserver ntp2.example.com iburst");
  EXPECT_EQ(text("{{ tags|lines('x {}') }}"), "");
  EXPECT_EQ(text("{{ os.sysctl|lines('{key} = {value}') }}"),
            "net.ipv4.ip_forward = 1\nvm.swappiness = 10");
  EXPECT_EQ(text("{{ limits|lines('{domain} {type} {item} {value}') }}"),
            "* soft memlock unlimited\n* - nofile 1048576");
  EXPECT_EQ(text("{{ os.ntp_servers|lines('${X} {} { y }') }}"),
            "${X} ntp1.example.com { y }\n${X} ntp2.example.com { y }");
  EXPECT_EQ(text("{{ word|upper }} {{ word | lower }}"), "MIXED mixed");
  EXPECT_EQ(text("{{ os.ntp_servers|join(' ')|upper }}"), "NTP1.EXAMPLE.COM NTP2.EXAMPLE.COM");
  EXPECT_EQ(text("{{ node.missing|default('a')|upper }}"), "A");
  EXPECT_EQ(text("{{ gpu.count|int }} {{ gpu.ratio|int }} {{ os.sysctl['vm.swappiness']|int }}"),
            "8 2 10");
  EXPECT_EQ(text("{{ '-3.9'|int }} {{ '+7'|int }} {{ '007'|int }}"), "-3 7 7");
  EXPECT_EQ(shell("sysctl -w vm.swappiness={{ os.sysctl['vm.swappiness']|int }}"),
            "sysctl -w vm.swappiness=10");
}

TEST(Template, LinesDoesNotExpandMarkersInsideValues) {
  const json vars = json::parse(R"({"l": ["{}", "{key}"], "m": {"{value}": "{key}"}})");
  EXPECT_EQ(render_ok("{{ l|lines('<{}>') }}", TemplateContext::Text, vars), "<{}>\n<{key}>");
  EXPECT_EQ(render_ok("{{ m|lines('{key}:{value}') }}", TemplateContext::Text, vars),
            "{value}:{key}");
}

TEST(TemplateErrors, SpecifiedMessages) {
  EXPECT_EQ(text_error("{{ gpu.driver_versoin }}"),
            "undefined variable 'gpu.driver_versoin' (did you mean 'gpu.driver_version'?)");
  EXPECT_EQ(text_error("{{ gpu.firmware }}"), "undefined variable 'gpu.firmware'");
  EXPECT_EQ(text_error("{{ nod.name }}"), "undefined variable 'nod' (did you mean 'node'?)");
  EXPECT_EQ(text_error("{{ os.sysctl['vm.swapiness'] }}"),
            "undefined variable 'os.sysctl['vm.swapiness']' (did you mean "
            "'os.sysctl['vm.swappiness']'?)");
  EXPECT_EQ(text_error("a {{ node.name"), "unterminated '{{' at offset 2");
  EXPECT_EQ(text_error("ok {{ node.name }} {{ x\necho it's"), "unterminated '{{' at offset 19");
  EXPECT_EQ(text_error("{{ os.ntp_servers|jion(',') }}"),
            "unknown filter 'jion' (did you mean 'join'?)");
  EXPECT_EQ(text_error("{{ node.name|frobnicate }}"), "unknown filter 'frobnicate'");
  EXPECT_EQ(text_error("{{ node.name|join(',') }}"), "filter 'join' needs a list, got string");
  EXPECT_EQ(shell_error("sysctl {{ os.sysctl }}"),
            "cannot put an object into a shell command: 'os.sysctl'");
  EXPECT_EQ(text_error("x {{ }}"), "empty expression in '{{ }}' at offset 2");
  EXPECT_EQ(text_error("{{}}"), "empty expression in '{{ }}' at offset 0");
}

TEST(TemplateErrors, SyntaxMessages) {
  EXPECT_EQ(text_error("{{ 'abc }}"), "unterminated string at offset 3");
  EXPECT_EQ(text_error("x {{ \"abc }} and }}"), "unterminated string at offset 5");
  EXPECT_EQ(text_error("{{ node. }}"), "unexpected end of expression at offset 9 in '{{ node. }}'");
  EXPECT_EQ(text_error("{{ node.name) }}"), "unexpected ')' at offset 12 in '{{ node.name) }}'");
  EXPECT_EQ(text_error("{{ node name }}"), "unexpected 'name' at offset 8 in '{{ node name }}'");
  EXPECT_EQ(text_error("{{ node['a' }}"),
            "unexpected end of expression at offset 12 in '{{ node['a' }}'");
  EXPECT_EQ(text_error("{{ x[-1] }}"), "unexpected '-1' at offset 5 in '{{ x[-1] }}'");
  EXPECT_EQ(text_error("{{ 'a' 'b' }}"), "unexpected string 'b' at offset 7 in '{{ 'a' 'b' }}'");
  EXPECT_EQ(text_error("{{ a + b }}"), "unexpected '+' at offset 5 in '{{ a + b }}'");
  EXPECT_EQ(text_error("{{ 5 }}"), "unexpected '5' at offset 3 in '{{ 5 }}'");
  EXPECT_EQ(text_error("{{ a|default('x' 'y') }}"),
            "unexpected string 'y' at offset 17 in '{{ a|default('x' 'y') }}'");
  EXPECT_EQ(text_error("{{ a| }}"), "unexpected end of expression at offset 6 in '{{ a| }}'");
}

TEST(TemplateErrors, FilterMessages) {
  EXPECT_EQ(text_error("{{ a|default }}"), "filter 'default' takes 1 argument, got 0");
  EXPECT_EQ(text_error("{{ a|upper('x') }}"), "filter 'upper' takes no arguments, got 1");
  EXPECT_EQ(text_error("{{ a|join(1) }}"), "filter 'join' needs a string argument, got number");
  EXPECT_EQ(text_error("{{ gpu.count|upper }}"), "filter 'upper' needs a string, got number");
  EXPECT_EQ(text_error("{{ os.ntp_servers|lower }}"), "filter 'lower' needs a string, got list");
  EXPECT_EQ(text_error("{{ node.name|int }}"),
            "filter 'int' needs a number or a numeric string, got a non-numeric string");
  EXPECT_EQ(text_error("{{ '1.'|int }}"),
            "filter 'int' needs a number or a numeric string, got a non-numeric string");
  EXPECT_EQ(text_error("{{ gpu.mig|int }}"),
            "filter 'int' needs a number or a numeric string, got bool");
  EXPECT_EQ(text_error("{{ '99999999999999999999'|int }}"),
            "filter 'int' got a number out of range");
  EXPECT_EQ(text_error("{{ mixed|join(',') }}"),
            "filter 'join' needs a list of scalars, got an element of type object");
  EXPECT_EQ(text_error("{{ node.name|lines('{}') }}"),
            "filter 'lines' needs a list or an object, got string");
  EXPECT_EQ(text_error("{{ mixed|lines('{}') }}"),
            "filter 'lines' has no marker '{}' in element 1");
  EXPECT_EQ(text_error("{{ os.ntp_servers|lines('server {name}') }}"),
            "filter 'lines' has no marker '{name}' in element 0");
  EXPECT_EQ(text_error("{{ os.sysctl|lines('{key} = {vaule}') }}"),
            "filter 'lines' has no marker '{vaule}' (did you mean '{value}'?)");
  EXPECT_EQ(text_error("{{ limits|lines('{domian} {item}') }}"),
            "filter 'lines' has no marker '{domian}' in element 0 (did you mean '{domain}'?)");
  EXPECT_EQ(
      render_error("{{ l|lines('{}') }}", TemplateContext::Text, json::parse(R"({"l": [1, [2]]})")),
      "filter 'lines' needs scalars or objects as list elements, got list in element 1");
  EXPECT_EQ(render_error("{{ l|lines('{}') }}", TemplateContext::Text,
                         json::parse(R"({"l": [{"a": null}]})")),
            "filter 'lines' needs scalar values, got null for key 'a' in element 0");
  EXPECT_EQ(render_error("{{ m|lines('{}') }}", TemplateContext::Text,
                         json::parse(R"({"m": {"k": [1]}})")),
            "filter 'lines' needs scalar values, got list for key 'k'");
  // default covers only what comes before it.
  EXPECT_EQ(text_error("{{ node.missing|upper|default('x') }}"),
            "undefined variable 'node.missing'");
}

TEST(TemplateErrors, ValueMessages) {
  EXPECT_EQ(text_error("{{ os.ntp_servers[2] }}"),
            "undefined variable 'os.ntp_servers[2]' (the list has 2 elements)");
  EXPECT_EQ(text_error("{{ node.name[0] }}"), "cannot index 'node.name' with [0]: it is a string");
  EXPECT_EQ(text_error("{{ os.ntp_servers.first }}"),
            "cannot look up 'first' in 'os.ntp_servers': it is a list");
  EXPECT_EQ(text_error("{{ scheduler.slurm.features }}"),
            "undefined variable 'scheduler.slurm.features'");
  EXPECT_EQ(text_error("{{ os.proxy }}"),
            "variable 'os.proxy' is null (use default('...') to allow that)");
  EXPECT_EQ(shell_error("{{ os.proxy }}"),
            "variable 'os.proxy' is null (use default('...') to allow that)");
  EXPECT_EQ(text_error("{{ os.ntp_servers }}"),
            "cannot put a list into text: 'os.ntp_servers' (use join or lines)");
  EXPECT_EQ(text_error("{{ os.sysctl }}"),
            "cannot put an object into text: 'os.sysctl' (use lines)");
  EXPECT_EQ(shell_error("echo {{ mixed }}"),
            "cannot put an object into a shell command: 'mixed[1]'");
  EXPECT_EQ(render_error("{{ v }}", TemplateContext::Shell, json::parse(R"({"v": [null]})")),
            "cannot put a null into a shell command: 'v[0]'");
}

TEST(TemplateVariables, ListsRootAndFullPathOnce) {
  auto vars = template_variables(
      "{{ node.name }} {{ os.ntp_servers[0] }} {{ node.name|upper }} {{ '{{' }} {{ gpu }} "
      "{{ os.sysctl['vm.swappiness']|default('1') }}");
  ASSERT_TRUE(vars.ok()) << vars.error().message;
  EXPECT_EQ(*vars, (std::vector<std::string>{"node", "node.name", "os", "os.ntp_servers[0]", "gpu",
                                             "os.sysctl['vm.swappiness']"}));
  auto none = template_variables("plain text");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(TemplateVariables, ReportsTheSameErrorsAsRendering) {
  for (std::string_view bad :
       {"{{ a|jion(',') }}", "x {{ a", "{{ }}", "{{ a. }}", "{{ a|default }}"}) {
    auto vars = template_variables(bad);
    ASSERT_FALSE(vars.ok()) << bad;
    EXPECT_EQ(vars.error().message, render_error(bad, TemplateContext::Text)) << bad;
  }
  auto quoted = template_variables("echo '{{ node.name }}'", TemplateContext::Shell);
  ASSERT_FALSE(quoted.ok());
  EXPECT_EQ(quoted.error().message, shell_error("echo '{{ node.name }}'"));
  EXPECT_TRUE(template_variables("echo '{{ node.name }}'").ok());  // Text: no shell rules
}

}  // namespace
}  // namespace gpuexpand
