#pragma once
// What the kinds' decide() share: adding a change with its reason, and the
// facts every file-like kind reads the same way. The registry makes one per
// step decided and hands it to the kind.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuexpand/steps/facts_request.hpp"
#include "gpuexpand/steps/params.hpp"
#include "gpuexpand/steps/step.hpp"

namespace gpuexpand::steps {

using nlohmann::json;  // the kinds' vocabulary

// object[key], or nullptr when `object` is no object or has no such key.
const nlohmann::json* member(const nlohmann::json& object, const std::string& key);
std::string quoted(const std::string& s);  // 'text', for reasons
std::vector<std::string> split_lines(const std::string& text);

// For predict(): facts["files"][path], made an object when it was none.
nlohmann::json& file_entry(nlohmann::json& facts, const std::string& path);
// For predict(): mode, owner and group as the step sets them.
void set_ownership(nlohmann::json& entry, const nlohmann::json& params);
// For request_facts(): the probe looks at the step's `path` (absolute ones).
void request_path(const ResolvedStep& step, FactsRequest& request);
// For check_rendered(): `names` must be one name or a list of names.
Result<void> need_names(const nlohmann::json& params);

class Decision {
 public:
  Decision(const StepInstance& step, const nlohmann::json& facts, const ChangedSteps& changed,
           std::vector<PlannedChange>& out)
      : step_(step), facts_(facts), changed_(changed), out_(out) {}

  const nlohmann::json& params() const { return step_.params; }
  const nlohmann::json& facts() const { return facts_; }
  const StepInstance& step() const { return step_; }
  std::string param(const char* key, const std::string& fallback = "") const {
    return param_text(step_.params, key, fallback);
  }

  void add(ChangeAction action, const std::string& target, const std::string& reason);
  // A change that restart_on and reboot_on do not count (a package hold).
  void add_bookkeeping(ChangeAction action, const std::string& target, const std::string& reason);
  // The last change added gets the diff of a file's content.
  void attach_diff(const std::string& current, const std::string& wanted);
  // A fact section the probe did not return: we cannot know, so we say so.
  bool unknown(const char* section, const std::string& target);
  // A fact that is one string (facts[section]) against the parameter
  // `param`: "is 'a', wanted 'b'", or '?' when the probe did not say.
  void compare_scalar(const char* section, const char* param);
  // The facts of `path`; nullptr (with a '?' said) when the facts do not tell.
  const nlohmann::json* file_facts(const std::string& path);
  // The facts of a file that exists; nullptr (with the change said) when
  // the facts do not tell or the file is not there yet.
  const nlohmann::json* existing_file(const std::string& path);
  // mode, owner and group against the parameters of the same names.
  void ownership(const nlohmann::json& file, const std::string& path);
  // Certain when a listed step certainly changes; unknown when only '?'
  // changes were planned for them; nullopt when none changes.
  std::optional<ChangeAction> trigger(const std::vector<std::string>& ids) const;
  // The listed ids that plan changes: "a, b".
  std::string changed_list(const std::vector<std::string>& ids) const;

 private:
  const StepInstance& step_;
  const nlohmann::json& facts_;
  const ChangedSteps& changed_;
  std::vector<PlannedChange>& out_;
};

}  // namespace gpuexpand::steps
