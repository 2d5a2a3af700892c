#include "ssh_runner_impl.hpp"

#include "gpuexpand/util/digest.hpp"

namespace gpuexpand {

std::string wrap_for_node(const std::string& command, bool become_sudo, std::chrono::milliseconds limit) {
  // The node holds the command to its time limit itself (coreutils
  // `timeout`, in every Debian, RHEL and busybox): a command the controller
  // gave up on must not go on changing the node after its phase was rolled
  // back. `timeout` signals the command's whole process group: TERM at the
  // limit, KILL kNodeKillGraceSeconds later. Whole seconds, rounded up.
  const long long seconds = std::max<long long>(1, (limit.count() + 999) / 1000);
  // A script on stdin (`sh -s`, every probe and most steps) is a program
  // and its argument already: timeout starts it itself, one shell fewer
  // per command. Anything else may hold pipes and quotes: through sh -c.
  const std::string body = command == "sh -s" ? command : "sh -c " + shell_quote(command);
  const std::string limited =
      "timeout -k " + std::to_string(kNodeKillGraceSeconds) + " " + std::to_string(seconds) + " " + body;
  // -n: never prompt (a prompt would hang the run); the whole command line,
  // pipes and all, runs as root.
  return become_sudo ? "sudo -n -- " + limited : limited;
}

SshRunner::Impl::Impl(std::vector<NodeEndpoint> endpoints, SshRunnerOptions opts)
    : options(std::move(opts)),
      window(options.parallel) {
  init_libssh2_once();
  nodes.resize(endpoints.size());
  for (size_t i = 0; i < endpoints.size(); ++i) {
    Connection& c = nodes[i];
    c.endpoint = std::move(endpoints[i]);
    c.index = i;
    const SshNodeRoute* route = i < options.routes.size() ? &options.routes[i] : nullptr;
    c.identity_file = route && !route->identity_file.empty() ? route->identity_file : options.identity_file;
    c.passphrase = passphrase_for(c.identity_file);
    const std::optional<NodeEndpoint>& bastion = route && route->bastion ? route->bastion : options.bastion;
    if (bastion) {
      const std::string& identity =
          route && !route->bastion_identity_file.empty() ? route->bastion_identity_file : options.identity_file;
      c.via = static_cast<int>(bastion_for(*bastion, identity));
      bastions[static_cast<size_t>(c.via)].members.push_back(i);
    }
  }
  auto loaded = KnownHosts::load(options.known_hosts);
  if (loaded) {
    known_hosts = std::move(loaded.value());
  } else {
    known_hosts_error = loaded.error().message;
  }
}

SshRunner::Impl::~Impl() {
  // Nodes first: their channels live in the bastions' sessions.
  for (auto& c : nodes) teardown(c, true);
  for (auto& b : bastions) {
    for (LIBSSH2_CHANNEL* channel : b.closing) libssh2_channel_free(channel);
    b.closing.clear();
    teardown(b.link, true);
  }
}

std::string SshRunner::Impl::passphrase_for(const std::string& identity) const {
  const auto found = options.passphrases.find(identity);
  return found != options.passphrases.end() ? found->second : options.passphrase;
}

size_t SshRunner::Impl::bastion_for(const NodeEndpoint& endpoint, const std::string& identity) {
  for (size_t k = 0; k < bastions.size(); ++k) {
    if (same_bastion(bastions[k].link, endpoint, identity)) return k;
  }
  Bastion& b = bastions.emplace_back();
  b.link.endpoint = endpoint;
  if (b.link.endpoint.name.empty()) b.link.endpoint.name = endpoint.address;
  b.link.index = bastions.size() - 1;
  b.link.is_bastion = true;
  b.link.identity_file = identity;
  b.link.passphrase = passphrase_for(identity);
  return bastions.size() - 1;
}

std::string SshRunner::Impl::who(const Connection& c) const {
  const std::string name = c.endpoint.name == c.endpoint.address ? c.endpoint.name
                                                                 : c.endpoint.name + " (" + c.endpoint.address + ")";
  return c.is_bastion ? "bastion " + name : name;
}

Bastion* SshRunner::Impl::bastion_of(const Connection& c) {
  return c.via >= 0 ? &bastions[static_cast<size_t>(c.via)] : nullptr;
}

// The socket handed to libssh2: behind a bastion, the bastion's (libssh2
// only checks it is non-blocking; the I/O goes through the tunnel).
int SshRunner::Impl::session_socket(const Connection& c) const {
  return c.via >= 0 ? bastions[static_cast<size_t>(c.via)].link.fd : c.fd;
}

void SshRunner::Impl::teardown(Connection& c, bool polite) {
  leave_window(c, false);
  // Behind a bastion: make the tunnel fail first, so that freeing the
  // session does not wait for an answer that nobody will carry.
  if (c.tunnel) c.tunnel->dead = true;
  const bool tunnelled = c.via >= 0;
  if (c.channel) {
    libssh2_channel_free(c.channel);
    c.channel = nullptr;
  }
  c.channel_stage = ChannelStage::Done;
  if (c.agent) {
    libssh2_agent_disconnect(c.agent);
    libssh2_agent_free(c.agent);
    c.agent = nullptr;
    c.agent_identity = nullptr;
  }
  if (c.session) {
    // A polite disconnect may block for a round trip; at the end of a run
    // that is fine, after an error it is not worth it.
    if (polite && c.stage == Stage::Ready && !tunnelled) {
      libssh2_session_set_blocking(c.session, 1);
      libssh2_session_set_timeout(c.session, 2000);
      libssh2_session_disconnect(c.session, "gpuexpand done");
    }
    // A dead socket makes libssh2 free at once instead of returning
    // EAGAIN while it waits for channels to close (and leaking).
    if (c.fd >= 0) ::shutdown(c.fd, SHUT_RDWR);
    libssh2_session_free(c.session);
    c.session = nullptr;
  }
  c.reader.reset();  // after the session: freeing it may still read
  if (c.tunnel) {
    if (c.tunnel->channel) {
      Bastion& b = bastions[static_cast<size_t>(c.via)];
      if (b.link.session) b.closing.push_back(c.tunnel->channel);
    }
    c.tunnel.reset();
  }
  if (c.via >= 0 && (c.stage == Stage::WaitingForBastion || c.stage == Stage::Tunnelling)) {
    Bastion& b = bastions[static_cast<size_t>(c.via)];
    std::erase(b.open_queue, c.index);
    if (b.opening == c.index) b.opening_abandoned = true;
  }
  if (c.is_bastion) bastions[c.index].closing.clear();  // freed with the session
  if (c.fd >= 0) {
    ::close(c.fd);
    c.fd = -1;
  }
  if (c.stage != Stage::Failed) c.stage = Stage::Idle;
}

// The connection cannot be used: fail every queued job with the reason.
void SshRunner::Impl::fail_connection(Connection& c, FailureKind kind, const std::string& message) {
  c.failure = kind;
  c.failure_message = message;
  c.attempts = 0;  // work submitted later (a reboot wait) gets fresh tries
  teardown(c, false);
  c.stage = Stage::Failed;
  fail_queue(c);
}

void SshRunner::Impl::fail_queue(Connection& c) {
  // Only the jobs queued now: a callback that submits again (a reboot
  // wait retrying) starts a fresh connection attempt instead.
  std::deque<Job> failing;
  failing.swap(c.queue);
  while (!failing.empty()) {
    Job job = std::move(failing.front());
    failing.pop_front();
    CommandOutcome outcome;
    outcome.failure = c.failure;
    outcome.message = c.failure_message;
    if (!job.connect_only) record(c, job.request, outcome);
    if (job.done) job.done(outcome);
  }
  c.active = false;
}

void SshRunner::Impl::record(const Connection& c, const CommandRequest& request, const CommandOutcome& outcome) {
  if (!options.audit) return;
  AuditRecord audit;
  audit.node = c.endpoint.name;
  audit.user = c.endpoint.user;
  audit.sudo = via_sudo(request);
  audit.command = request.sensitive ? "<sensitive>" : request.command;
  audit.exit_code = outcome.exit_code;
  audit.failure = outcome.failure;
  audit.duration = outcome.duration;
  audit.stdin_bytes = request.stdin_data.size();
  if (!request.stdin_data.empty()) audit.stdin_sha256 = sha256_hex(request.stdin_data);
  if (!request.sensitive) {
    audit.out = outcome.out;
    audit.err = outcome.err;
  }
  audit.message = outcome.message;
  options.audit(audit);
}

SshRunner::SshRunner(std::vector<NodeEndpoint> nodes, SshRunnerOptions options)
    : impl_(std::make_unique<Impl>(std::move(nodes), std::move(options))) {}

SshRunner::~SshRunner() = default;

void SshRunner::submit(size_t node, CommandRequest request, Callback done) {
  Connection& c = impl_->nodes.at(node);
  // A failure is not for ever: work submitted after it tries again (a node
  // coming back from a reboot refuses connections for a while).
  if (c.stage == Stage::Failed && c.queue.empty()) {
    c.stage = Stage::Idle;
    c.failure = FailureKind::None;
    c.failure_message.clear();
  }
  const auto not_before = Clock::now() + request.delay;
  c.queue.push_back({std::move(request), std::move(done), not_before});
}

void SshRunner::connect(size_t node) {
  submit(node, CommandRequest{}, nullptr);
  impl_->nodes.at(node).queue.back().connect_only = true;
}

void SshRunner::release(size_t node) { impl_->nodes.at(node).release_when_idle = true; }

size_t SshRunner::open_sessions() const {
  size_t open = 0;
  for (const auto& c : impl_->nodes) open += c.session != nullptr ? 1u : 0u;
  for (const auto& b : impl_->bastions) open += b.link.session != nullptr ? 1u : 0u;
  return open;
}

void SshRunner::run() { impl_->run(); }

size_t SshRunner::handshake_retries() const { return impl_->handshake_retries; }

LoopCounts SshRunner::loop_counts() const { return impl_->loop_counts; }

}  // namespace gpuexpand
