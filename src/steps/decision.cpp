#include "gpuexpand/steps/decision.hpp"

#include "gpuexpand/util/text_diff.hpp"

#include <algorithm>
#include <sstream>

namespace gpuexpand::steps {

using nlohmann::json;

namespace {

std::string normalize_mode(const std::string& mode) {
  std::string m = mode;
  while (m.size() > 3 && m.front() == '0') m.erase(0, 1);
  return m;
}

}  // namespace

const json* member(const json& object, const std::string& key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

json& file_entry(json& facts, const std::string& path) {
  json& entry = facts["files"][path];
  if (!entry.is_object()) entry = json::object();
  return entry;
}

void set_ownership(json& entry, const json& params) {
  for (const char* key : {"mode", "owner", "group"}) {
    if (params.contains(key)) entry[key] = params[key];
  }
}

Result<void> need_names(const json& params) {
  const auto is_list_or_string = [](const json& v) {
    if (v.is_string()) return true;
    if (!v.is_array()) return false;
    return std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_string(); });
  };
  return need_shape(params, "names", params.contains("names") && is_list_or_string(params["names"]),
                    "a name or a list of names");
}

void request_path(const ResolvedStep& step, FactsRequest& request) {
  const std::string path = string_param(step.params, "path");
  if (!path.empty() && path.front() == '/') request.files.insert(path);
}

void Decision::compare_scalar(const char* section, const char* param_key) {
  const std::string wanted = param(param_key);
  if (unknown(section, section)) return;
  const std::string current = facts_[section].get<std::string>();
  if (current != wanted) add(ChangeAction::Update, section, "is " + quoted(current) + ", wanted " + quoted(wanted));
}

void Decision::add(ChangeAction action, const std::string& target, const std::string& reason) {
  out_.push_back({step_.key, step_.type, action, target, reason});
}

void Decision::attach_diff(const std::string& current, const std::string& wanted) {
  if (!out_.empty()) out_.back().diff = unified_diff(current, wanted);
}

void Decision::add_bookkeeping(ChangeAction action, const std::string& target, const std::string& reason) {
  out_.push_back({step_.key, step_.type, action, target, reason, false});
}

bool Decision::unknown(const char* section, const std::string& target) {
  if (member(facts_, section)) return false;
  add(ChangeAction::Unknown, target, std::string("no '") + section + "' in the facts; decided on the node");
  return true;
}

const json* Decision::file_facts(const std::string& path) {
  const json* files = member(facts_, "files");
  const json* f = files ? member(*files, path) : nullptr;
  if (!f) add(ChangeAction::Unknown, path, "not in the facts; decided on the node");
  return f;
}

const json* Decision::existing_file(const std::string& path) {
  const json* f = file_facts(path);
  if (f && !f->value("exists", false)) {
    add(ChangeAction::Create, path, "does not exist");
    return nullptr;
  }
  return f;
}

void Decision::ownership(const json& f, const std::string& path) {
  const std::string mode = param("mode");
  if (!mode.empty() && member(f, "mode") && normalize_mode(param_text(f, "mode")) != normalize_mode(mode)) {
    add(ChangeAction::Update, path, "mode " + param_text(f, "mode") + ", wanted " + mode);
  }
  for (const char* key : {"owner", "group"}) {
    const std::string wanted = param(key);
    if (!wanted.empty() && member(f, key) && param_text(f, key) != wanted) {
      add(ChangeAction::Update, path, std::string(key) + " " + param_text(f, key) + ", wanted " + wanted);
    }
  }
}

std::optional<ChangeAction> Decision::trigger(const std::vector<std::string>& ids) const {
  std::optional<ChangeAction> result;
  for (const auto& id : ids) {
    auto it = changed_.find(id);
    if (it == changed_.end()) continue;
    if (it->second) return ChangeAction::Update;
    result = ChangeAction::Unknown;
  }
  return result;
}

std::string Decision::changed_list(const std::vector<std::string>& ids) const {
  std::string list;
  for (const auto& id : ids) {
    if (changed_.count(id)) list += (list.empty() ? "" : ", ") + id;
  }
  return list;
}

}  // namespace gpuexpand::steps
