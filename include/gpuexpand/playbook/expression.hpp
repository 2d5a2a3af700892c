#pragma once
// `when:` conditions on playbook steps. Small and closed on purpose: no
// function calls, no arithmetic, and values from the spec are only ever
// compared, never parsed as conditions themselves.
//
//   or_expr  := and_expr ('or' and_expr)*
//   and_expr := not_expr ('and' not_expr)*
//   not_expr := 'not' not_expr | cmp
//   cmp      := operand (('=='|'!='|'<'|'<='|'>'|'>='|'in'|'not in') operand)?
//   operand  := path | 'string' | "string" | number | true | false | null
//             | '(' or_expr ')' | '[' (literal (',' literal)*)? ']'
//   path     := name ('.' name | '[' digits ']' | '[' 'string' ']')*
//
// Names are [A-Za-z_][A-Za-z0-9_-]*. Strings have no escapes. Versions must be
// quoted ('535.129.03'); an unquoted one is a syntax error, not a number.
//
// Semantics: a missing path is null. null, false, 0, "", [], {} are false.
// == and != compare JSON values (1 != "1"). Ordering compares numbers
// numerically, two version-like strings (digits and dots) with
// compare_versions, other strings bytewise; anything else is an error.
// 'in' tests list membership, substrings, or object keys; a null right side
// (an absent optional field) contains nothing. 'and'/'or' short-circuit, so
// "gpu.driver_version and gpu.driver_version < '550'" is safe when absent.

#include <nlohmann/json.hpp>
#include <string_view>

#include "gpuexpand/util/result.hpp"

namespace gpuexpand {

// Evaluates a playbook step's `when:` condition against vars.
Result<bool> evaluate_condition(std::string_view expression, const nlohmann::json& vars);

// The same, with every path under `unknown_root` (e.g. "facts") not known
// yet: a condition that needs one is an error, one that short-circuits
// before it ("item.address and facts.os.family == 'rhel'") has a value.
Result<bool> evaluate_condition_without(std::string_view expression, const nlohmann::json& vars,
                                        std::string_view unknown_root);

// Syntax check only (used when loading playbooks, before any vars exist).
Result<void> check_condition_syntax(std::string_view expression);

// Dotted version comparison: <0, 0 or >0. Components compare numerically by
// their leading digits ("550.9" < "550.10", "03" == "3"), then by any rest as
// text; a missing component counts as "0", so "550" == "550.0".
int compare_versions(std::string_view a, std::string_view b);

}  // namespace gpuexpand
