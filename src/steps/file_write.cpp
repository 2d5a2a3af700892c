#include "file_write.hpp"

#include "gpuexpand/steps/params.hpp"
#include "gpuexpand/util/shell_quote.hpp"

namespace gpuexpand::steps {

std::string ownership_commands(const nlohmann::json& p, const std::string& path) {
  std::string out;
  if (p.contains("mode")) out += " && chmod " + shell_quote(param_text(p, "mode")) + " " + path;
  const std::string owner = param_text(p, "owner"), group = param_text(p, "group");
  if (!owner.empty() || !group.empty()) {
    out += " && chown " + shell_quote(owner + (group.empty() ? "" : ":" + group)) + " " + path;
  }
  return out;
}

ActionCommand write_file_action(const nlohmann::json& p) {
  const std::string qp = shell_quote(param_text(p, "path"));
  const std::string content = param_text(p, "content");
  std::string command = "d=$(dirname -- " + qp +
                        ") && mkdir -p -- \"$d\" && t=$(mktemp \"$d/.gpuexpand.XXXXXX\") && " + kRemoveTempOnExit +
                        " && cat > \"$t\" && " +
                        holds_bytes_test("\"$t\"", content.size());
  command += ownership_commands(p, "\"$t\"");
  command += " && mv -f -- \"$t\" " + qp + " || exit 1";  // the EXIT trap removes $t
  return {command, content};
}

}  // namespace gpuexpand::steps
