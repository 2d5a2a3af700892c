#pragma once
// Playbook templates: "{{ expr }}" placeholders filled from the cluster spec.
// The spec is untrusted, so the engine, never the playbook author, decides how
// a value is quoted: in shell lines every value becomes inert shell words.
//
//   expr    := (path | 'string' | "string") ('|' filter)*
//   path    := name ('.' name | '[' digits ']' | '[' 'string' ']')*
//   filter  := name ('(' literal (',' literal)* ')')?
//
// Names are [A-Za-z_][A-Za-z0-9_-]*; keys with other characters (sysctl names
// such as net.ipv4.ip_forward) are written os.sysctl['net.ipv4.ip_forward'].
// String literals have no escapes; use the other quote kind instead.
//
// Filters:
//   default(x)    x when the value is missing or null (covers only what precedes it)
//   join(sep)     list of scalars -> string
//   lines(format) one line per element, "\n"-joined, no trailing newline:
//                 list of scalars fills {}, list of objects fills {field},
//                 object gives one line per key with {key} and {value}.
//                 A {name} marker that matches nothing is an error; ${...} and
//                 braces around non-names are kept as written.
//   upper, lower  ASCII case of a string
//   int           number or numeric string ("12", "-3.9") -> integer, truncated
// A rendered value is never scanned for placeholders again.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gpuexpand/util/result.hpp"

namespace gpuexpand {

enum class TemplateContext {
  // command/check/rollback lines. Scalars become one shell_quote'd word, a list
  // becomes one word per element, objects and nulls are errors. A placeholder
  // must stand where a bare word can: inside quotes, backquotes, ${...}, a
  // comment, a here-document or right after a backslash it is an error,
  // because the quoting the engine adds would not survive there.
  Shell,
  // file contents: strings raw, numbers and bools as JSON text; lists,
  // objects and nulls are errors unless a filter turned them into a string.
  Text,
};

// Replaces every "{{ expr }}" in `text`. A literal "{{" is written
// "{{ '{{' }}". Missing variables are errors unless `default` covers them.
Result<std::string> render_template(std::string_view text, const nlohmann::json& vars,
                                    TemplateContext context);

// The variables `text` refers to, for validating playbooks before any spec
// exists: for each reference its first segment and its full path (e.g. "os",
// "os.ntp_servers[0]"), without duplicates, in order of appearance. Malformed
// templates give the same errors as render_template; with context Shell the
// placement checks above run too.
Result<std::vector<std::string>> template_variables(
    std::string_view text, TemplateContext context = TemplateContext::Text);

}  // namespace gpuexpand
