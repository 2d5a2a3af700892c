#include "ssh_runner_impl.hpp"

namespace gpuexpand {

void SshRunner::Impl::begin_job(Connection& c) {
  Job& job = c.queue.front();
  c.channel_stage = ChannelStage::Opening;
  c.limit = job.request.timeout.count() > 0 ? job.request.timeout : options.command_timeout;
  c.wire_command = wrap_for_node(job.request.command, via_sudo(job.request), c.limit);
  c.written = 0;
  c.out.clear();
  c.err.clear();
  c.started = Clock::now();
  // The node stops the command at the limit (wrap_for_node); this deadline
  // is for a node that cannot: its link or its sshd gone quiet.
  c.deadline = c.started + c.limit + std::chrono::seconds(kNodeKillGraceSeconds + 5);
}

bool SshRunner::Impl::session_would_block(Connection& c) {
  return libssh2_session_last_errno(c.session) == LIBSSH2_ERROR_EAGAIN;
}

// The session broke while a job ran: fail that job as "connection lost"
// (it may have half-run) and reconnect for the next one.
void SshRunner::Impl::lose_connection(Connection& c, const std::string& what) {
  Job job = std::move(c.queue.front());
  c.queue.pop_front();
  CommandOutcome outcome;
  outcome.failure = FailureKind::ConnectionLost;
  outcome.message = who(c) + ": connection lost while running `" + short_command(job.request.command) +
                    "`: " + what;
  outcome.duration = std::chrono::duration_cast<milliseconds>(Clock::now() - c.started);
  teardown(c, false);
  record(c, job.request, outcome);
  if (job.done) job.done(outcome);
}

void SshRunner::Impl::step_job(Connection& c) {
  Job& job = c.queue.front();
  for (;;) {
    switch (c.channel_stage) {
      case ChannelStage::Opening:
        c.channel = libssh2_channel_open_session(c.session);
        if (!c.channel) {
          if (session_would_block(c)) return;
          lose_connection(c, "cannot open a channel: " + last_error(c.session));
          return;
        }
        c.channel_stage = ChannelStage::Executing;
        break;
      case ChannelStage::Executing: {
        const int rc = libssh2_channel_exec(c.channel, c.wire_command.c_str());
        if (rc == LIBSSH2_ERROR_EAGAIN) return;
        if (rc != 0) {
          lose_connection(c, "exec refused: " + last_error(c.session));
          return;
        }
        c.channel_stage = ChannelStage::Writing;
        break;
      }
      case ChannelStage::Writing: {
        // Read while writing: a command that prints before it reads all
        // its input must not deadlock on a full window.
        if (!drain(c)) return;
        const std::string& data = job.request.stdin_data;
        while (c.written < data.size()) {
          const ssize_t n = libssh2_channel_write(c.channel, data.data() + c.written, data.size() - c.written);
          if (n == LIBSSH2_ERROR_EAGAIN) return;
          if (n < 0) {
            // The command may have exited without reading its input.
            if (libssh2_channel_eof(c.channel)) break;
            lose_connection(c, "writing stdin: " + last_error(c.session));
            return;
          }
          c.written += static_cast<size_t>(n);
        }
        c.channel_stage = ChannelStage::SendingEof;
        break;
      }
      case ChannelStage::SendingEof: {
        const int rc = libssh2_channel_send_eof(c.channel);
        if (rc == LIBSSH2_ERROR_EAGAIN) return;
        c.channel_stage = ChannelStage::Reading;
        break;
      }
      case ChannelStage::Reading:
        if (!drain(c)) return;
        if (!libssh2_channel_eof(c.channel)) return;
        c.channel_stage = ChannelStage::Closing;
        break;
      case ChannelStage::Closing: {
        int rc = libssh2_channel_close(c.channel);
        if (rc == 0) rc = libssh2_channel_wait_closed(c.channel);
        if (rc == LIBSSH2_ERROR_EAGAIN) return;
        finish_job(c);
        return;
      }
      case ChannelStage::Done:
        return;
    }
  }
}

// Reads what is available on stdout and stderr. False when the job ended
// (connection lost) and must not be touched again.
bool SshRunner::Impl::drain(Connection& c) {
  char buffer[32768];
  for (int stream : {0, SSH_EXTENDED_DATA_STDERR}) {
    for (;;) {
      const ssize_t n = libssh2_channel_read_ex(c.channel, stream, buffer, sizeof buffer);
      if (n > 0) {
        (stream == 0 ? c.out : c.err).append(buffer, static_cast<size_t>(n));
        continue;
      }
      if (n == 0 || n == LIBSSH2_ERROR_EAGAIN) break;
      lose_connection(c, "reading output: " + last_error(c.session));
      return false;
    }
  }
  return true;
}

// `timeout` exits 124 when it stopped the command with TERM, 137 when KILL
// was needed; a command that exits so by itself before its limit is just
// a failed command.
static bool stopped_by_node_limit(int exit_code, milliseconds ran, milliseconds limit) {
  return (exit_code == 124 || exit_code == 128 + 9) && ran + milliseconds(500) >= limit;
}

void SshRunner::Impl::finish_job(Connection& c) {
  Job job = std::move(c.queue.front());
  c.queue.pop_front();
  CommandOutcome outcome;
  outcome.duration = std::chrono::duration_cast<milliseconds>(Clock::now() - c.started);
  outcome.out = std::move(c.out);
  outcome.err = std::move(c.err);
  char* signal = nullptr;
  libssh2_channel_get_exit_signal(c.channel, &signal, nullptr, nullptr, nullptr, nullptr, nullptr);
  outcome.exit_code = signal ? 128 : libssh2_channel_get_exit_status(c.channel);
  libssh2_channel_free(c.channel);
  c.channel = nullptr;
  c.channel_stage = ChannelStage::Done;
  const std::string shown = job.request.sensitive ? "<sensitive command>" : short_command(job.request.command);
  if (signal) {
    outcome.failure = FailureKind::CommandFailed;
    outcome.message = who(c) + ": `" + shown + "` was killed by SIG" + signal;
    libssh2_free(c.session, signal);
  } else if (stopped_by_node_limit(outcome.exit_code, outcome.duration, c.limit)) {
    outcome.failure = FailureKind::CommandTimeout;
    outcome.message = who(c) + ": `" + shown + "` timed out after " + std::to_string(outcome.duration.count() / 1000) +
                      " s (stopped on the node)";
  } else if (outcome.exit_code != 0) {
    const bool sudo_password = via_sudo(job.request) && outcome.exit_code == 1 &&
                               outcome.err.find("sudo: a password is required") != std::string::npos;
    outcome.failure = sudo_password ? FailureKind::SudoPassword : FailureKind::CommandFailed;
    outcome.message = sudo_password
                          ? who(c) + ": sudo needs a password for " + c.endpoint.user +
                                " (become: sudo requires NOPASSWD sudo on the node)"
                          : who(c) + ": `" + shown + "` exited " + std::to_string(outcome.exit_code) +
                                (outcome.err.empty() ? "" : ": " + last_lines(outcome.err, kStderrTailLines));
  }
  record(c, job.request, outcome);
  if (job.done) job.done(outcome);
}

void SshRunner::Impl::time_out_job(Connection& c) {
  Job job = std::move(c.queue.front());
  c.queue.pop_front();
  CommandOutcome outcome;
  outcome.failure = FailureKind::CommandTimeout;
  outcome.duration = std::chrono::duration_cast<milliseconds>(Clock::now() - c.started);
  outcome.out = std::move(c.out);
  outcome.err = std::move(c.err);
  outcome.message = who(c) + ": `" + (job.request.sensitive ? "<sensitive command>" : short_command(job.request.command)) +
                    "` timed out after " + std::to_string(outcome.duration.count() / 1000) + " s";
  // The remote command may still run; the session is not trusted further.
  teardown(c, false);
  record(c, job.request, outcome);
  if (job.done) job.done(outcome);
}

}  // namespace gpuexpand
