#include "context.hpp"

#include "gpuexpand/util/local_file.hpp"

#include <spdlog/spdlog.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>
#include <fstream>
#include <iostream>

#include "gpuexpand/util/exit_codes.hpp"
#include "gpuexpand/facts/facts_file.hpp"
#include "gpuexpand/facts/gather.hpp"
#include "gpuexpand/transport/passphrase.hpp"
#include "gpuexpand/transport/ssh_config.hpp"
#include "gpuexpand/transport/ssh_runner.hpp"
#include "gpuexpand/spec/spec_loader.hpp"
#include "gpuexpand/util/embedded_data.hpp"

namespace gpuexpand::cli {

Context::Context(GlobalOptions options) : options_(std::move(options)) {}

const JsonSchema& Context::schema(const std::string& name) {
  if (auto it = schemas_.find(name); it != schemas_.end()) return *it->second;
  const std::string path = "schemas/" + name + ".schema.json";
  auto text = read_data_file(path, options_.data_dir);
  if (!text) throw CommandFailed{kExitError, "cannot read " + path + (options_.data_dir.empty() ? "" : " in " + options_.data_dir)};
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::exception& e) {
    throw CommandFailed{kExitError, path + ": not valid JSON: " + e.what()};
  }
  auto parsed = JsonSchema::parse(std::move(document), path);
  if (!parsed) throw CommandFailed{kExitError, parsed.error().message};
  return *schemas_.emplace(name, parsed.value()).first->second;
}

ClusterSpec Context::load_spec(const std::string& path) {
  SpecLoadResult result = load_spec_file(path, schema("cluster"));
  if (!result.spec) {
    print_diagnostics(result.diagnostics, result.source_text);
    const size_t n = result.diagnostics.size();
    throw CommandFailed{kExitError, path + ": " + std::to_string(n) + (n == 1 ? " error" : " errors")};
  }
  return std::move(*result.spec);
}

const PlaybookSet& Context::playbooks() {
  if (!playbooks_) {
    std::vector<Diagnostic> diagnostics;
    auto set = load_playbooks(options_.data_dir, schema("playbook"), diagnostics);
    if (!set) {
      print_diagnostics(diagnostics, "");
      throw CommandFailed{kExitError, "the playbooks are invalid"};
    }
    playbooks_ = std::move(*set);
  }
  return *playbooks_;
}

FactsByNode Context::recorded_facts(const std::string& path) {
  auto recorded = load_facts_file(path, schema("facts-file"), schema("facts"));
  if (!recorded) throw CommandFailed{kExitError, recorded.error().message};
  return std::move(recorded.value());
}

bool Context::stdout_is_terminal() const { return isatty(STDOUT_FILENO) == 1; }

size_t Context::terminal_rows() const {
  struct winsize size {};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_row > 0) return size.ws_row;
  if (const char* lines = std::getenv("LINES")) {
    try {
      if (const long n = std::stol(lines); n > 0) return static_cast<size_t>(n);
    } catch (...) {
    }
  }
  return 40;
}

size_t Context::terminal_columns() const {
  struct winsize size {};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) != 0) return 0;
  return size.ws_col;
}

bool Context::use_color() const {
  if (options_.no_color || options_.color == "never") return false;
  if (options_.color == "always") return true;
  return std::getenv("NO_COLOR") == nullptr && stdout_is_terminal();
}

std::string expand_home(const std::string& path) { return expand_home_path(path); }

void add_ssh_options(CLI::App& command, SshOverrides& overrides) {
  command.add_option("--parallel", overrides.parallel, "Nodes worked on at once (default: the spec's ssh.parallel)")
      ->check(CLI::Range(1, 10000));
  command.add_flag("--accept-new-host-keys", overrides.accept_new_host_keys,
                   "Record host keys of nodes not in known_hosts (trust on first use); a changed key is still refused");
}

namespace {

// Encrypted keys that will log in more than once are decrypted once, by an
// ssh-agent of this run's own (private_agent.hpp): libssh2 would decrypt
// them again at every login, 0.2 s of CPU each. Where that agent cannot
// start, every login decrypts, as before, and from 20 logins on the
// warning says what that costs.
void start_private_agent(SshRunnerOptions& options) {
  std::map<std::string, size_t> logins_by_key;
  for (const auto& r : options.routes) {
    ++logins_by_key[r.identity_file.empty() ? options.identity_file : r.identity_file];
    if (r.bastion) ++logins_by_key[r.bastion_identity_file.empty() ? options.identity_file : r.bastion_identity_file];
  }
  if (options.bastion) ++logins_by_key[options.identity_file];
  std::vector<PrivateAgent::Key> encrypted;
  size_t logins = 0;
  for (const auto& [key, count] : logins_by_key) {
    if (key.empty()) continue;
    if (auto is = key_file_is_encrypted(key); !is || !*is) continue;
    const auto own = options.passphrases.find(key);
    encrypted.push_back({key, own != options.passphrases.end() ? own->second : options.passphrase});
    logins += count;
  }
  if (encrypted.empty() || logins < 2) return;
  auto agent = PrivateAgent::start(encrypted);
  if (agent) {
    spdlog::debug("{} encrypted key(s) decrypted once, into an ssh-agent of this run's own ({}), for {} logins",
                  encrypted.size(), (*agent)->socket_path(), logins);
    options.agent = std::move(agent.value());
    return;
  }
  for (const auto& key : encrypted) {
    if (auto note = encrypted_key_cost_note(key.path, logins_by_key[key.path])) {
      spdlog::warn("{} (this run could not start an ssh-agent of its own: {})", *note, agent.error().message);
    } else {
      spdlog::debug("no ssh-agent of this run's own: {}", agent.error().message);
    }
  }
}

}  // namespace

std::unique_ptr<CommandRunner> make_ssh_runner(const ClusterSpec& spec, const std::vector<const NodeSpec*>& nodes,
                                               const SshOverrides& overrides,
                                               std::function<void(const AuditRecord&)> audit) {
  const SshSettings& ssh = spec.ssh;
  // Precedence: what the spec says explicitly, then ssh.config_file (read
  // only when the spec names it, so runs stay reproducible), then defaults.
  std::optional<SshConfig> config;
  if (!ssh.config_file.empty()) {
    auto loaded = SshConfig::load(expand_home(ssh.config_file));
    if (!loaded) throw CommandFailed{kExitError, "ssh.config_file: " + loaded.error().message};
    config = std::move(loaded.value());
    for (const auto& note : config->notes()) spdlog::debug("{}", note);
  }
  SshExplicitSettings given;
  given.user_explicit = ssh.user_set;
  given.port_explicit = ssh.port_set;
  given.identity_file = expand_home(ssh.identity_file);
  given.bastion = ssh.bastion;
  SshRunnerOptions options;
  options.identity_file = given.identity_file;  // empty: ssh-agent
  std::vector<NodeEndpoint> endpoints;
  for (const NodeEndpoint& endpoint : endpoints_for(spec, nodes)) {
    auto route = resolve_ssh_route(endpoint, config ? &*config : nullptr, given);
    if (!route) throw CommandFailed{kExitError, route.error().message};
    endpoints.push_back(route->endpoint);
    options.routes.push_back({route->identity_file, route->bastion, route->bastion_identity_file});
  }
  options.known_hosts = expand_home(ssh.known_hosts);
  if (!ssh.passphrase_env.empty()) {
    const char* passphrase = std::getenv(ssh.passphrase_env.c_str());
    if (!passphrase) {
      throw CommandFailed{kExitError, "ssh.passphrase_env names " + ssh.passphrase_env + ", which is not set"};
    }
    options.passphrase = passphrase;
  } else {
    // An encrypted key without passphrase_env: ask once per key, on a terminal.
    std::set<std::string> keys = {options.identity_file};
    for (const auto& r : options.routes) keys.insert({r.identity_file, r.bastion_identity_file});
    for (const auto& key : keys) {
      if (key.empty()) continue;
      if (auto encrypted = key_file_is_encrypted(key); encrypted && *encrypted) {
        auto passphrase = prompt_passphrase(key);
        if (!passphrase) {
          throw CommandFailed{kExitError, "the key " + key + " is encrypted: set ssh.passphrase_env, or run on a terminal"};
        }
        options.passphrases[key] = *passphrase;
      }
    }
  }
  start_private_agent(options);
  options.accept_new_host_keys = overrides.accept_new_host_keys;
  options.become_sudo = ssh.become == "sudo";
  options.connect_timeout = std::chrono::seconds(ssh.connect_timeout_s);
  options.command_timeout = std::chrono::seconds(ssh.command_timeout_s);
  options.keepalive_interval_s = ssh.keepalive_interval_s;
  options.parallel = static_cast<size_t>(overrides.parallel > 0 ? overrides.parallel : ssh.parallel);
  options.audit = [audit](const AuditRecord& r) {
    if (audit) audit(r);
    spdlog::debug("{}: `{}` -> {} ({} ms)", r.node, r.command,
                  r.failure == FailureKind::None || r.failure == FailureKind::CommandFailed
                      ? "exit " + std::to_string(r.exit_code)
                      : std::string(failure_name(r.failure)),
                  r.duration.count());
  };
  return std::make_unique<SshRunner>(std::move(endpoints), std::move(options));
}

void print_diagnostics(const std::vector<Diagnostic>& diagnostics, const std::string& source_text) {
  for (const auto& d : diagnostics) {
    std::cerr << (source_text.empty() ? d.to_string() : render_with_source(d, source_text)) << '\n';
  }
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string temp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      std::remove(temp.c_str());
      throw CommandFailed{kExitError, "cannot write " + path};
    }
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    std::remove(temp.c_str());
    throw CommandFailed{kExitError, "cannot write " + path + ": " + ec.message()};
  }
}

std::string utc_now_rfc3339() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

}  // namespace gpuexpand::cli

namespace gpuexpand::cli {

RunGuard::~RunGuard() { (void)finish(RunStatus::Failed, 1); }

Result<void> RunGuard::finish(RunStatus status, int exit_code) {
  if (finished_) return {};
  finished_ = true;
  return store_.finish_run(run_id_, status, exit_code, utc_now_rfc3339());
}

int64_t begin_locked_run(StateStore& store, const RunRecord& record) {
  auto begun = store.begin_run(record);
  if (!begun) throw CommandFailed{kExitError, begun.error().message};
  if (auto* conflict = std::get_if<LockConflict>(&begun.value())) throw CommandFailed{kExitLocked, describe(*conflict)};
  return std::get<int64_t>(begun.value());
}

std::vector<std::string> node_names(const std::vector<const NodeSpec*>& nodes) {
  std::vector<std::string> names;
  names.reserve(nodes.size());
  for (const auto* node : nodes) names.push_back(node->name);
  return names;
}

}  // namespace gpuexpand::cli
