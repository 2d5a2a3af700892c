// gpuexpand report [SPEC] [--run ID] --html FILE | --markdown: one run of
// the state store as a page to look at (view/report_view.hpp). Reads the
// store only; the page is written atomically.

#include <iostream>

#include "commands.hpp"
#include "gpuexpand/playbook/playbook.hpp"
#include "gpuexpand/state/state_store.hpp"
#include "gpuexpand/util/exit_codes.hpp"
#include "gpuexpand/view/report_view.hpp"

namespace gpuexpand::cli {
namespace {

struct ReportOptions {
  std::string spec, state, html;
  int64_t run = 0;
  bool markdown = false;
};

int run_report(Context&, const ReportOptions& options) {
  if (options.html.empty() == !options.markdown) throw CommandFailed{kExitError, "report: give --html FILE or --markdown"};
  const std::string path = store_to_read(options.state, options.spec);
  auto store = open_existing_store(path);
  int64_t id = options.run;
  if (id == 0) {  // the newest run that changed nodes: apply, else rollback
    for (const auto& r : checked(store->runs(0))) {
      if (r.command == "apply" || r.command == "rollback") {
        id = r.id;
        break;
      }
    }
    if (id == 0) throw CommandFailed{kExitError, "no apply or rollback run in " + path + " (--run ID for another)"};
  }
  auto run = checked(store->run(id));
  if (!run) throw CommandFailed{kExitError, "no run " + std::to_string(id) + " in " + path};
  RunReportData data;
  data.run = *run;
  data.phases = checked(store->phase_results(id));
  data.checks = checked(store->checks_of_run(id));
  data.nodes = checked(store->node_outcomes(id));
  data.commands = checked(store->audit(id)).size();
  data.phase_order = phase_order();
  if (options.markdown) {
    std::cout << run_report_markdown(data);
    return kExitOk;
  }
  write_file_atomically(options.html, run_report_html(data));
  std::cerr << "wrote " << options.html << " (run " << id << ")\n";
  return kExitOk;
}

}  // namespace

void add_report_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand("report", "One run as a page to look at (HTML) or a pull-request comment (Markdown)");
  cmd->add_option("SPEC", options->spec, "The spec whose store to read (.gpuexpand/state.db beside it)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--state", options->state, "State store (SQLite; default: beside SPEC, else ./.gpuexpand/state.db)");
  cmd->add_option("--run", options->run, "This run (default: the newest apply or rollback)")->check(CLI::PositiveNumber);
  cmd->add_option("--html", options->html, "Write one self-contained HTML page here (no script, nothing fetched)");
  cmd->add_flag("--markdown", options->markdown, "Print Markdown instead: the grid and the failures, for CI comments");
  cmd->footer("Examples:\n  gpuexpand report spec.yaml --html run.html\n  gpuexpand report spec.yaml --run 12 --markdown >> \"$GITHUB_STEP_SUMMARY\"\n\n"
              "The page: the run's summary, a node x phase grid coloured by result, a timeline of phases per\n"
              "node, the failures with their reasons, and the acceptance checks with their figures as charts.");
  set_action(*cmd, action, options, run_report);
}

}  // namespace gpuexpand::cli
