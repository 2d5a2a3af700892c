#include "gpuexpand/transport/ssh_config.hpp"

#include "gpuexpand/util/wildcard.hpp"

#include <glob.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace gpuexpand {

namespace {

constexpr int kMaxIncludeDepth = 16;

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string home_dir() {
  if (const char* home = std::getenv("HOME"); home && *home) return home;
  if (const passwd* pw = ::getpwuid(::geteuid()); pw && pw->pw_dir) return pw->pw_dir;
  return "/";
}

std::string local_user() {
  if (const passwd* pw = ::getpwuid(::geteuid()); pw && pw->pw_name) return pw->pw_name;
  if (const char* user = std::getenv("USER"); user && *user) return user;
  return "root";
}

std::string local_host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  std::string host = name;
  return host.substr(0, host.find('.'));
}

std::string expand_tilde(const std::string& path) {
  if (path == "~") return home_dir();
  if (path.rfind("~/", 0) == 0) return home_dir() + path.substr(1);
  if (path.size() > 1 && path[0] == '~') {
    const size_t slash = path.find('/');
    const std::string user = path.substr(1, slash == std::string::npos ? std::string::npos : slash - 1);
    if (const passwd* pw = ::getpwnam(user.c_str()); pw && pw->pw_dir) {
      return std::string(pw->pw_dir) + (slash == std::string::npos ? "" : path.substr(slash));
    }
  }
  return path;
}

std::optional<int> parse_port(std::string_view text) {
  if (text.empty() || text.size() > 5) return std::nullopt;
  int port = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    port = port * 10 + (c - '0');
  }
  if (port < 1 || port > 65535) return std::nullopt;
  return port;
}

// Splits a config line's arguments the way OpenSSH's argv_split does:
// whitespace separates, "double" and 'single' quotes group, a backslash
// escapes a quote or a backslash, an unquoted # starts a comment.
std::optional<std::vector<std::string>> split_arguments(std::string_view text) {
  std::vector<std::string> args;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i >= text.size() || text[i] == '#') break;
    std::string arg;
    char quote = 0;
    for (; i < text.size(); ++i) {
      const char c = text[i];
      if (quote == 0 && std::isspace(static_cast<unsigned char>(c))) break;
      if (c == '\\' && i + 1 < text.size() &&
          (text[i + 1] == '"' || text[i + 1] == '\'' || text[i + 1] == '\\' || (quote == 0 && text[i + 1] == ' '))) {
        arg += text[++i];
      } else if (quote == 0 && (c == '"' || c == '\'')) {
        quote = c;
      } else if (quote != 0 && c == quote) {
        quote = 0;
      } else {
        arg += c;
      }
    }
    if (quote != 0) return std::nullopt;  // unterminated quote
    args.push_back(std::move(arg));
  }
  return args;
}

bool has_glob_characters(const std::string& path) { return path.find_first_of("*?[") != std::string::npos; }

}  // namespace

// ---------------------------------------------------------------- patterns

bool ssh_pattern_match(std::string_view text, std::string_view pattern) {
  return wildcard_match(text, pattern, /*question_matches_one=*/true);
}

bool ssh_host_matches(const std::string& host, const std::vector<std::string>& patterns) {
  const std::string name = lower(host);
  bool matched = false;
  for (const auto& raw : patterns) {
    const bool negated = !raw.empty() && raw[0] == '!';
    const std::string pattern = lower(negated ? std::string_view(raw).substr(1) : std::string_view(raw));
    if (!ssh_pattern_match(name, pattern)) continue;
    if (negated) return false;
    matched = true;
  }
  return matched;
}

// ---------------------------------------------------------------- tokens

Result<std::string> expand_ssh_tokens(std::string_view text, const SshTokens& tokens) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 1 >= text.size()) return make_error("\"" + std::string(text) + "\": a lone % at the end");
    switch (const char token = text[++i]) {
      case '%': out += '%'; break;
      case 'd': out += home_dir(); break;
      case 'u': out += local_user(); break;
      case 'l': out += local_host_name(); break;
      case 'h': out += tokens.host; break;
      case 'n': out += tokens.original_host; break;
      case 'r': out += tokens.remote_user; break;
      case 'p': out += std::to_string(tokens.port); break;
      default:
        return make_error("\"" + std::string(text) + "\": unknown token %" + std::string(1, token) +
                          " (gpuexpand knows %% %d %u %l %h %n %r %p)");
    }
  }
  return expand_tilde(out);
}

// ---------------------------------------------------------------- parsing

Result<SshConfig> SshConfig::load(const std::string& path) {
  const std::string file = expand_tilde(path);
  std::ifstream in(file);
  if (!in) return make_error("cannot read the ssh config " + file);
  std::ostringstream text;
  text << in.rdbuf();
  SshConfig config;
  config.parse_into(text.str(), file, home_dir() + "/.ssh", {}, false, 0);
  if (!config.problems_.empty()) {
    std::string message = config.problems_.front();
    if (config.problems_.size() > 1) message += " (and " + std::to_string(config.problems_.size() - 1) + " more)";
    return make_error(message);
  }
  return config;
}

SshConfig SshConfig::parse(std::string_view text, std::string base_dir) {
  SshConfig config;
  config.parse_into(text, "ssh config", base_dir, {}, false, 0);
  return config;
}

void SshConfig::parse_into(std::string_view text, const std::string& source, const std::string& base_dir,
                           const std::vector<std::vector<std::string>>& outer, bool outer_never, int depth) {
  // Lines before the first Host line apply under the enclosing condition
  // (every host, at the top level).
  blocks_.push_back({outer, outer_never, {}});
  int line_number = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string where = source + ":" + std::to_string(line_number);

    size_t i = 0;
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i >= line.size() || line[i] == '#') continue;
    size_t k = i;
    while (k < line.size() && !std::isspace(static_cast<unsigned char>(line[k])) && line[k] != '=') ++k;
    const std::string keyword = lower(line.substr(i, k - i));
    while (k < line.size() && std::isspace(static_cast<unsigned char>(line[k]))) ++k;
    if (k < line.size() && line[k] == '=') ++k;
    auto args = split_arguments(line.substr(k));
    if (!args) {
      problems_.push_back(where + ": unterminated quote");
      continue;
    }
    if (args->empty()) {
      problems_.push_back(where + ": " + keyword + " needs a value");
      continue;
    }

    if (keyword == "host") {
      auto condition = outer;
      condition.push_back(*args);
      blocks_.push_back({std::move(condition), outer_never, {}});
    } else if (keyword == "match") {
      // Match conditions (exec, user, canonical, final, …) are not
      // evaluated: the block never applies.
      notes_.push_back(where + ": Match blocks are not evaluated; the lines up to the next Host or Match are ignored");
      blocks_.push_back({outer, true, {}});
    } else if (keyword == "include") {
      if (depth >= kMaxIncludeDepth) {
        problems_.push_back(where + ": Include nested too deeply");
        continue;
      }
      const Block current{blocks_.back().patterns, blocks_.back().never, {}};
      for (const auto& argument : *args) include(argument, where, base_dir, current, depth);
      // Lines after the Include continue under the block it appeared in.
      blocks_.push_back({current.patterns, current.never, {}});
    } else if (keyword == "port" && !parse_port(args->front())) {
      problems_.push_back(where + ": Port " + args->front() + " is not a port number");
    } else {
      blocks_.back().directives.push_back({keyword, args->front(), where});
    }
  }
}

void SshConfig::include(const std::string& argument, const std::string& where, const std::string& base_dir,
                        const Block& current, int depth) {
  std::string path = expand_tilde(argument);
  if (path.empty() || path[0] != '/') {
    if (base_dir.empty()) {
      problems_.push_back(where + ": Include " + argument + ": a relative path needs a base directory");
      return;
    }
    path = base_dir + "/" + path;
  }
  std::vector<std::string> files;
  if (has_glob_characters(path)) {
    glob_t found{};
    if (::glob(path.c_str(), 0, nullptr, &found) == 0) {
      for (size_t i = 0; i < found.gl_pathc; ++i) files.emplace_back(found.gl_pathv[i]);
    }
    ::globfree(&found);
  } else if (::access(path.c_str(), F_OK) == 0) {
    files.push_back(path);
  }
  // A pattern or a path that names nothing is not an error (as in OpenSSH).
  for (const auto& file : files) {
    std::ifstream in(file);
    if (!in) {
      problems_.push_back(where + ": Include: cannot read " + file);
      continue;
    }
    std::ostringstream text;
    text << in.rdbuf();
    parse_into(text.str(), file, base_dir, current.patterns, current.never, depth + 1);
  }
}

// ---------------------------------------------------------------- lookup

SshHostConfig SshConfig::lookup(const std::string& host) const {
  SshHostConfig found;
  for (const auto& block : blocks_) {
    if (block.never) continue;
    const bool applies = std::all_of(block.patterns.begin(), block.patterns.end(),
                                     [&](const auto& patterns) { return ssh_host_matches(host, patterns); });
    if (!applies) continue;
    for (const auto& d : block.directives) {
      if (d.keyword == "hostname" && !found.hostname) {
        // Only %h and %% are meaningful here.
        std::string name;
        for (size_t i = 0; i < d.value.size(); ++i) {
          if (d.value[i] == '%' && i + 1 < d.value.size() && (d.value[i + 1] == 'h' || d.value[i + 1] == '%')) {
            name += d.value[++i] == 'h' ? host : "%";
          } else {
            name += d.value[i];
          }
        }
        found.hostname = name;
      } else if (d.keyword == "user" && !found.user) {
        found.user = d.value;
      } else if (d.keyword == "port" && !found.port) {
        found.port = parse_port(d.value);
      } else if (d.keyword == "identityfile" && !found.identity_file_as_written) {
        // OpenSSH tries every IdentityFile given; gpuexpand uses the first.
        found.identity_file_as_written = d.value;
      } else if (d.keyword == "proxyjump" && !found.proxy_jump && !found.proxy_command) {
        found.proxy_jump = d.value;
      } else if (d.keyword == "proxycommand" && !found.proxy_command && !found.proxy_jump) {
        found.proxy_command = d.value;
      }
    }
  }
  if (found.identity_file_as_written) {
    const SshTokens tokens{found.hostname.value_or(host), host, found.user.value_or(local_user()),
                           found.port.value_or(22)};
    auto expanded = expand_ssh_tokens(*found.identity_file_as_written, tokens);
    found.identity_file = expanded ? expanded.value() : *found.identity_file_as_written;
  }
  return found;
}

// ---------------------------------------------------------------- jump hosts

Result<JumpHost> parse_jump_host(std::string_view text) {
  const std::string shown(text);
  if (text.find(',') != std::string_view::npos) {
    return make_error("\"" + shown + "\" names several jump hosts: gpuexpand tunnels through one bastion only");
  }
  if (text.rfind("ssh://", 0) == 0) {
    text.remove_prefix(6);
    if (!text.empty() && text.back() == '/') text.remove_suffix(1);
  }
  JumpHost jump;
  if (const size_t at = text.rfind('@'); at != std::string_view::npos) {
    jump.user = std::string(text.substr(0, at));
    text.remove_prefix(at + 1);
    if (jump.user->empty()) return make_error("\"" + shown + "\": an empty user name");
  }
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return make_error("\"" + shown + "\": unbalanced [");
    jump.host = std::string(text.substr(1, close - 1));
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return make_error("\"" + shown + "\": expected :port after ]");
      port_text = rest.substr(1);
      if (port_text.empty()) return make_error("\"" + shown + "\": an empty port");
    }
  } else if (std::count(text.begin(), text.end(), ':') == 1) {
    const size_t colon = text.find(':');
    jump.host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
    if (port_text.empty()) return make_error("\"" + shown + "\": an empty port");
  } else {
    jump.host = std::string(text);  // a name, an IPv4 address or a bare IPv6 address
  }
  if (jump.host.empty()) return make_error("\"" + shown + "\": no host");
  if (jump.host.find_first_of(" \t/") != std::string::npos) return make_error("\"" + shown + "\": not a host name");
  if (!port_text.empty()) {
    jump.port = parse_port(port_text);
    if (!jump.port) return make_error("\"" + shown + "\": " + std::string(port_text) + " is not a port number");
  }
  return jump;
}

// ---------------------------------------------------------------- applying

NodeEndpoint apply_ssh_config(NodeEndpoint endpoint, const SshHostConfig& config, bool user_explicit,
                              bool port_explicit) {
  if (config.hostname && !config.hostname->empty()) endpoint.address = *config.hostname;
  if (config.user && !user_explicit) endpoint.user = *config.user;
  if (config.port && !port_explicit) endpoint.port = *config.port;
  return endpoint;
}

Result<SshRoute> resolve_ssh_route(const NodeEndpoint& node, const SshConfig* config,
                                   const SshExplicitSettings& spec) {
  const SshHostConfig host = config ? config->lookup(node.address) : SshHostConfig{};
  SshRoute route;
  route.endpoint = apply_ssh_config(node, host, spec.user_explicit, spec.port_explicit);

  if (!spec.identity_file.empty()) {
    route.identity_file = spec.identity_file;
  } else if (host.identity_file_as_written) {
    auto expanded = expand_ssh_tokens(*host.identity_file_as_written,
                                      {route.endpoint.address, node.address, route.endpoint.user, route.endpoint.port});
    if (!expanded) return make_error(node.name + ": IdentityFile " + expanded.error().message);
    route.identity_file = expanded.value();
  }

  std::string jump_text = spec.bastion;
  if (jump_text.empty()) {
    if (host.proxy_command && lower(*host.proxy_command) != "none") {
      return make_error(node.name + ": the ssh config sets ProxyCommand for " + node.address +
                        ", which gpuexpand does not run: use ProxyJump or ssh.bastion");
    }
    if (host.proxy_jump && lower(*host.proxy_jump) != "none") jump_text = *host.proxy_jump;
  }
  if (jump_text.empty()) return route;

  auto jump = parse_jump_host(jump_text);
  if (!jump) return make_error(node.name + ": bastion " + jump.error().message);
  const SshHostConfig jump_config = config ? config->lookup(jump->host) : SshHostConfig{};
  if (jump_config.proxy_jump && lower(*jump_config.proxy_jump) != "none") {
    return make_error(node.name + ": the bastion " + jump->host +
                      " has a ProxyJump of its own in the ssh config; gpuexpand tunnels through one bastion only");
  }
  if (jump_config.proxy_command && lower(*jump_config.proxy_command) != "none") {
    return make_error(node.name + ": the bastion " + jump->host +
                      " has a ProxyCommand in the ssh config, which gpuexpand does not run");
  }
  NodeEndpoint bastion;
  bastion.name = jump->host;
  bastion.address = jump_config.hostname && !jump_config.hostname->empty() ? *jump_config.hostname : jump->host;
  bastion.port = jump->port ? *jump->port : jump_config.port.value_or(22);
  bastion.user = jump->user ? *jump->user : jump_config.user.value_or(local_user());
  route.bastion = bastion;
  if (!spec.identity_file.empty()) {
    route.bastion_identity_file = spec.identity_file;
  } else if (jump_config.identity_file_as_written) {
    auto expanded = expand_ssh_tokens(*jump_config.identity_file_as_written,
                                      {bastion.address, jump->host, bastion.user, bastion.port});
    if (!expanded) return make_error(node.name + ": the bastion's IdentityFile " + expanded.error().message);
    route.bastion_identity_file = expanded.value();
  }
  return route;
}

}  // namespace gpuexpand
