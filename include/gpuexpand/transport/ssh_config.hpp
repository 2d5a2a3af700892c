#pragma once
// The common part of an OpenSSH client config (ssh_config(5)): which host
// name, user, port, key and jump host apply to a node.
//
// Read: `Host` blocks (several patterns per line, *, ?, !negation, matched
// case-insensitively against the name as given), keywords in any case,
// `Key value` and `Key=value`, double-quoted values, # comments, `Include`
// (relative paths under ~/.ssh as OpenSSH does for a user config, globs,
// nested up to 16 deep). The first value obtained for a keyword wins, as in
// OpenSSH, so specific blocks go first and `Host *` last.
//
// Not evaluated: `Match` blocks. Their conditions (exec, user, canonical,
// …) need more than a host name, so every line up to the next Host or
// Match line is skipped, and notes() says so. Every other keyword
// (ControlMaster, ForwardAgent, …) is ignored; ProxyCommand is recorded
// only so that resolve_ssh_route can refuse it rather than silently
// connect directly.
//
// Which settings win in gpuexpand (the precedence the CLI applies):
//   1. values the spec sets explicitly (ssh.user, ssh.port,
//      ssh.identity_file, ssh.bastion);
//   2. the ssh config file named by the spec's ssh.config_file, looked up
//      with each node's address (a node without an address: its name);
//   3. built-in defaults (user root, port 22, ssh-agent, no bastion).
// The config is read only when ssh.config_file names it: ~/.ssh/config is
// never read implicitly, so a run does not depend on whoever runs it.
// Because the spec's own defaults (user root, port 22) look like values,
// the CLI tells apply_ssh_config whether user and port were written in the
// spec.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuexpand/transport/runner.hpp"
#include "gpuexpand/util/result.hpp"

namespace gpuexpand {

// What a config file says about one host; unset where it says nothing.
struct SshHostConfig {
  std::optional<std::string> hostname;       // %h and %% expanded
  std::optional<std::string> user;
  std::optional<std::string> identity_file;  // ~, %d %u %l %h %n %r %p %% expanded (see lookup)
  std::optional<std::string> proxy_jump;     // as written: "none", "[user@]host[:port]" or a comma list
  std::optional<int> port;
  std::optional<std::string> proxy_command;  // recorded only to refuse it
  std::optional<std::string> identity_file_as_written;  // for re-expansion with the final user and port
};

class SshConfig {
 public:
  // Reads `path` (~/ expanded); relative Include paths are taken under
  // ~/.ssh. An unreadable file, a bad Port, an unreadable Include or a
  // keyword without a value is an error, as ssh refuses such a config.
  static Result<SshConfig> load(const std::string& path);
  // Parses text; relative Include paths are taken under base_dir (empty:
  // Include lines are reported in problems() and skipped).
  static SshConfig parse(std::string_view text, std::string base_dir);

  // The settings for `host` (the name as the user would type it after
  // `ssh`). %r in IdentityFile is the config's User for the host, else the
  // local user; %p its Port, else 22 (OpenSSH's defaults):
  // resolve_ssh_route expands them again with the values finally used.
  SshHostConfig lookup(const std::string& host) const;

  // Errors (parse() does not fail: load() turns these into its Error).
  const std::vector<std::string>& problems() const { return problems_; }
  // What was read but not applied (Match blocks), for a debug log.
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  struct Directive {
    std::string keyword;  // lower case
    std::string value;    // first argument, unquoted
    std::string where;    // "file:line"
  };
  struct Block {
    // Every list must match (a Host line inside an Include inside a Host
    // block adds a second list). Empty: applies to every host.
    std::vector<std::vector<std::string>> patterns;
    bool never = false;  // a Match block: never applies
    std::vector<Directive> directives;
  };

  void parse_into(std::string_view text, const std::string& source, const std::string& base_dir,
                  const std::vector<std::vector<std::string>>& outer, bool outer_never, int depth);
  void include(const std::string& argument, const std::string& where, const std::string& base_dir,
               const Block& current, int depth);

  std::vector<Block> blocks_;
  std::vector<std::string> problems_;
  std::vector<std::string> notes_;
};

// Whether `host` matches one Host line's patterns: any positive pattern
// matches and no negated one does (ssh_config(5) PATTERNS). Case-insensitive.
bool ssh_host_matches(const std::string& host, const std::vector<std::string>& patterns);
// One glob with * and ?.
bool ssh_pattern_match(std::string_view text, std::string_view pattern);

// ~/ and the tokens %% %d (home) %u (local user) %l (local host name)
// %h (remote host name) %n (host as given) %r (remote user) %p (port).
// An unknown token is an error, as in OpenSSH.
struct SshTokens {
  std::string host;           // %h
  std::string original_host;  // %n
  std::string remote_user;    // %r
  int port = 22;              // %p
};
Result<std::string> expand_ssh_tokens(std::string_view text, const SshTokens& tokens);

// "[user@]host[:port]" (also "[v6addr]:port" and ssh://user@host:port) as
// in ssh.bastion and ProxyJump. A comma list (several hops) is an error:
// gpuexpand tunnels through one bastion only.
struct JumpHost {
  std::optional<std::string> user;
  std::string host;
  std::optional<int> port;
};
Result<JumpHost> parse_jump_host(std::string_view text);

// The node endpoint after the config: HostName replaces the address (the
// node keeps its name for messages), User and Port apply unless the spec
// set them explicitly.
NodeEndpoint apply_ssh_config(NodeEndpoint endpoint, const SshHostConfig& config, bool user_explicit,
                              bool port_explicit);

// What the spec says explicitly, for resolve_ssh_route. Empty/unset: the
// spec does not say it (its defaults are in `defaults`).
struct SshExplicitSettings {
  bool user_explicit = false;
  bool port_explicit = false;
  std::string identity_file;  // the spec's ssh.identity_file (~ expanded by the caller), empty: none
  std::string bastion;        // the spec's ssh.bastion, empty: none
};

// Everything needed to reach one node.
struct SshRoute {
  NodeEndpoint endpoint;
  std::string identity_file;            // empty: ssh-agent
  std::optional<NodeEndpoint> bastion;  // reach the node through this host
  std::string bastion_identity_file;    // empty: ssh-agent
};

// Resolves one node: `node` carries the spec's values (its user and port
// are the spec's ssh.user/ssh.port, defaults included). `config` may be
// null (no ssh.config_file). The bastion is the spec's ssh.bastion when
// set, else the config's ProxyJump for the node ("none": direct); its
// HostName, User, Port and IdentityFile come from the config's block for
// the jump host; a jump host with neither user@ nor a config User logs in
// as the local user, as `ssh -J` does.
// Errors: ProxyCommand, a ProxyJump with several hops, a bad jump host,
// an unknown %-token.
Result<SshRoute> resolve_ssh_route(const NodeEndpoint& node, const SshConfig* config,
                                   const SshExplicitSettings& spec);

}  // namespace gpuexpand
