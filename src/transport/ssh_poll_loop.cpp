#include "ssh_runner_impl.hpp"

namespace gpuexpand {

void SshRunner::Impl::step(Connection& c) {
  switch (c.stage) {
    case Stage::Connecting: step_connecting(c); break;
    case Stage::Handshake: step_handshake(c); break;
    case Stage::Authenticating: step_authenticating(c); break;
    case Stage::Ready:
      // connect(): the session is up, which is all that was asked.
      while (!c.queue.empty() && c.channel_stage == ChannelStage::Done && c.queue.front().connect_only) {
        Job job = std::move(c.queue.front());
        c.queue.pop_front();
        CommandOutcome connected;
        connected.exit_code = 0;
        if (job.done) job.done(connected);
      }
      if (!c.queue.empty()) {
        if (c.channel_stage == ChannelStage::Done) {
          // An inactive node (its bastion steps every tunnelled member)
          // waits for a --parallel slot before it starts a command.
          if (!c.active || !front_due(c.queue, turn_now)) break;
          begin_job(c);
        }
        step_job(c);
      }
      break;
    case Stage::Idle: {
      // First use, or the session was dropped after a timeout or a lost
      // connection: (re)connect for the queued work, when a place in the
      // handshake window is free and any backoff is over.
      const auto now = turn_now;
      if (front_due(c.queue, now) && now >= c.retry_at && (c.via >= 0 || window.may_start())) start_connect(c);
      break;
    }
    case Stage::WaitingForBastion:
    case Stage::Tunnelling:
      break;  // the bastion moves these on (service_bastion)
    case Stage::Failed:
      break;
  }
}

void SshRunner::Impl::check_deadlines(Connection& c, Clock::time_point now) {
  const bool connecting = c.stage == Stage::Connecting || c.stage == Stage::Tunnelling ||
                          c.stage == Stage::Handshake || c.stage == Stage::Authenticating;
  if (connecting && now > c.connect_deadline) {
    std::string where = c.stage == Stage::Connecting ? "no TCP connection" : "no SSH handshake and login";
    if (c.stage == Stage::Tunnelling) where = "the " + who(bastion_of(c)->link) + " did not connect to it";
    fail_connection(c, FailureKind::ConnectTimeout,
                    who(c) + ": connection timed out (" + where + " within " +
                        std::to_string(options.connect_timeout.count() / 1000) + " s)");
  } else if (c.stage == Stage::Ready && !c.queue.empty() && c.channel_stage != ChannelStage::Done && now > c.deadline) {
    time_out_job(c);
  }
}

// Stepping a session that waits for input, read dry since poll() last
// reported any, would only hear EAGAIN again (libssh2 handles what it has
// buffered before it reads): the loop's blind step passes it by. Not while
// logging in (an agent's socket is not among those polled) nor between jobs.
bool SshRunner::Impl::waits_for_input(const Connection& c) {
  if (!c.reader || !c.reader->drained || c.revents != 0 || !c.session) return false;
  const bool in_exchange =
      c.stage == Stage::Handshake || (c.stage == Stage::Ready && c.channel_stage != ChannelStage::Done);
  return in_exchange && libssh2_session_block_directions(c.session) == LIBSSH2_SESSION_BLOCK_INBOUND;
}

// Only when one is due (libssh2 says in how many seconds): asking on every
// turn of the loop cost a clock read per session per turn.
void SshRunner::Impl::keep_alive(Connection& c, Clock::time_point now) {
  if (!c.session || c.stage != Stage::Ready || options.keepalive_interval_s <= 0 || now < c.keepalive_due) return;
  int next = 0;
  libssh2_keepalive_send(c.session, &next);  // EAGAIN: the next send flushes it
  c.keepalive_due = now + std::chrono::seconds(std::max(next, 1));
}

short SshRunner::Impl::poll_events(const Connection& c) {
  if (c.stage == Stage::Connecting) return POLLOUT;
  short events = 0;
  if (c.session) {
    const int directions = libssh2_session_block_directions(c.session);
    if (directions & LIBSSH2_SESSION_BLOCK_INBOUND) events |= POLLIN;
    if (directions & LIBSSH2_SESSION_BLOCK_OUTBOUND) events |= POLLOUT;
  }
  return events == 0 ? POLLIN : events;
}

// A released node's session, closed as soon as it is idle: the disconnect
// message without waiting on it (a node is one of hundreds here), then the
// socket. Its memory (libssh2's packet buffers, the ciphers' state) goes
// back at once rather than at the end of the run.
void SshRunner::Impl::close_released(Connection& c) {
  c.release_when_idle = false;
  if (c.session && c.stage == Stage::Ready && c.via < 0) {
    libssh2_session_set_blocking(c.session, 0);
    (void)libssh2_session_disconnect(c.session, "gpuexpand done");
  }
  if (c.session || c.fd >= 0) teardown(c, false);
}

void SshRunner::Impl::run() {
  for (;;) {
    ++loop_counts.turns;
    // Start or continue nodes up to the parallelism limit.
    size_t active = 0;
    for (auto& c : nodes) {
      if (c.active && c.queue.empty()) c.active = false;
      if (c.active) ++active;
      if (c.release_when_idle && c.queue.empty() && c.channel_stage == ChannelStage::Done) close_released(c);
    }
    for (auto& c : nodes) {
      if (active >= options.parallel) break;
      if (c.active || c.queue.empty()) continue;
      c.active = true;
      ++active;
      if (c.stage == Stage::Failed) fail_queue(c);
    }
    bool pending = false;
    for (auto& c : nodes) pending = pending || !c.queue.empty();
    if (!pending) return;

    // Advance everything that can move without waiting.
    turn_now = Clock::now();
    for (auto& c : nodes) {
      if (c.active && !waits_for_input(c)) step(c);
      c.revents = 0;
    }
    for (auto& b : bastions) service_bastion(b);

    // The sockets to wait on, each with its owner: a node's index, or
    // nodes.size() + a bastion's.
    Clock::time_point next_deadline = Clock::now() + milliseconds(1000);
    bool tunnels_open = false;
    for (size_t i = 0; i < nodes.size(); ++i) {
      Connection& c = nodes[i];
      if (!c.active || c.queue.empty()) continue;
      if (c.stage == Stage::Tunnelling) next_deadline = std::min(next_deadline, c.connect_deadline);
      if (c.via >= 0 && c.session) {
        next_deadline = std::min(next_deadline, c.stage != Stage::Ready ? c.connect_deadline : c.deadline);
      }
      if (c.fd < 0) continue;
      ready_set.want(c.fd, poll_events(c), i, c.socket_serial);
      const bool connecting = c.stage != Stage::Ready;
      next_deadline = std::min(next_deadline, connecting ? c.connect_deadline : c.deadline);
    }
    for (size_t k = 0; k < bastions.size(); ++k) {
      Bastion& b = bastions[k];
      if (b.link.fd < 0 || !bastion_has_work(b)) continue;
      short events = poll_events(b.link);
      if (b.link.stage == Stage::Ready) {
        events = POLLIN;  // the nodes' sessions wait for data through it
        if (b.want_write) events |= POLLOUT;
        tunnels_open = true;
      } else {
        next_deadline = std::min(next_deadline, b.link.connect_deadline);
      }
      ready_set.want(b.link.fd, events, nodes.size() + k, b.link.socket_serial);
    }
    for (auto& c : nodes) {
      // Only a node between jobs or waiting to connect has work due at a
      // time; one that is connecting waits on its socket (and its connect
      // deadline, above). Counting those too made every wait a zero one
      // while any handshake was in flight: the loop spun.
      const bool between_jobs = c.stage == Stage::Idle || c.stage == Stage::Ready;
      if (c.active && !c.queue.empty() && c.channel_stage == ChannelStage::Done && between_jobs) {
        // A node waiting for a place in the handshake window is woken by
        // the handshakes in flight, not by a deadline (that would spin).
        if (c.stage == Stage::Idle && c.via < 0 && !window.may_start()) continue;
        const auto due = c.stage == Stage::Idle ? std::max(c.queue.front().not_before, c.retry_at)
                                                : c.queue.front().not_before;
        next_deadline = std::min(next_deadline, due);
      }
    }
    // Rounded up: a deadline less than a millisecond away is not a zero
    // wait, or the loop turns without waiting until it passes.
    const auto wait = std::chrono::ceil<milliseconds>(next_deadline - Clock::now());
    // Through a bastion, wake up now and then anyway: libssh2 can hold
    // data for one channel that it read while serving another.
    const int timeout = static_cast<int>(std::clamp<long>(wait.count(), 0, tunnels_open ? 200 : 1000));
    if (ready_set.empty()) {
      // The steps above may have finished the last job: then there is
      // nothing to wait for, and sleeping here would add up to a second
      // to every run (the loop's top returns once no queue holds work).
      // The same for work a callback just gave a node that is not active
      // yet (the controller after a node's probe): the loop's top starts it.
      bool waiting = false, startable = false;
      size_t running = 0;
      for (const auto& c : nodes) {
        waiting = waiting || !c.queue.empty();
        startable = startable || (!c.active && !c.queue.empty());
        running += (c.active && !c.queue.empty()) ? 1u : 0u;
      }
      if (!waiting || (startable && running < options.parallel)) continue;
      // Only delayed work: sleep until the first is due.
      ::poll(nullptr, 0, timeout);
    } else {
      if (!ready_set.wait(timeout, ready)) return;
      for (const auto& [index, revents] : ready) {
        Connection& owner = index < nodes.size() ? nodes[index] : bastions[index - nodes.size()].link;
        owner.revents = revents;
        if (owner.reader && (revents & (POLLIN | POLLERR | POLLHUP))) detail::input_ready(*owner.reader);
      }
    }
    const auto now = turn_now = Clock::now();
    for (auto& c : nodes) {
      if (c.revents) step(c);
      if (c.active) check_deadlines(c, now);
      keep_alive(c, now);
    }
    for (auto& b : bastions) {
      service_bastion(b);
      check_bastion_deadline(b, now);
      keep_alive(b.link, now);
    }
  }
}

}  // namespace gpuexpand
