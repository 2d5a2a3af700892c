#include "gpuexpand/steps/step.hpp"

#include "gpuexpand/util/enum_names.hpp"

namespace gpuexpand {

char action_marker(ChangeAction action) {
  switch (action) {
    case ChangeAction::Create: return '+';
    case ChangeAction::Update: return '~';
    case ChangeAction::Remove: return '-';
    case ChangeAction::Unknown: return '?';
  }
  return '?';
}

namespace {

// "unknown" first: the fallback.
constexpr EnumNames<ChangeAction, 4> kActionNames{{{ChangeAction::Unknown, "unknown"},
                                                  {ChangeAction::Create, "create"},
                                                  {ChangeAction::Update, "update"},
                                                  {ChangeAction::Remove, "remove"}}};

}  // namespace

std::string action_name(ChangeAction action) { return std::string(name_of(kActionNames, action)); }
std::optional<ChangeAction> parse_action(const std::string& name) { return parse_name(kActionNames, name); }

}  // namespace gpuexpand
