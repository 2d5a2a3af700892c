#include "gpuexpand/steps/step.hpp"

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

std::string action_name(ChangeAction action) {
  switch (action) {
    case ChangeAction::Create: return "create";
    case ChangeAction::Update: return "update";
    case ChangeAction::Remove: return "remove";
    case ChangeAction::Unknown: return "unknown";
  }
  return "unknown";
}

std::optional<ChangeAction> parse_action(const std::string& name) {
  for (auto a : {ChangeAction::Create, ChangeAction::Update, ChangeAction::Remove, ChangeAction::Unknown}) {
    if (action_name(a) == name) return a;
  }
  return std::nullopt;
}

}  // namespace gpuexpand
