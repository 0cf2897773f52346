package io.kvraft.benchmark;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code kv-benchmark merge DIR...}: adds up the result files of many clients. */
@Command(name = "merge", mixinStandardHelpOptions = true, sortOptions = false,
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:ok", "1:merged error rate over --max-error-rate", "2:bad usage or unreadable files"},
        description = "Merge the result-*.json and histogram-*.hlog files in the given directories: histograms are"
                + " added (percentiles never averaged), counts, rates and errors summed.")
final class MergeCommand implements Callable<Integer> {

    @ParentCommand
    BenchmarkMain parent;

    @Parameters(arity = "1..*", paramLabel = "DIR", description = "Directories written by --out.")
    List<Path> dirs;

    @Option(names = "--out", paramLabel = "DIR", description = "Write the merged figures to DIR/" + Merge.MERGED_JSON + ".")
    Path out;

    @Option(names = "--max-error-rate", defaultValue = "0.001", paramLabel = "R",
            description = "Exit with code 1 when the merged errors/operations exceeds this (default: ${DEFAULT-VALUE}).")
    double maxErrorRate;

    @Override
    public Integer call() {
        Merge.Merged m = Merge.merge(dirs);
        Merge.print(parent.stdout, m, maxErrorRate);
        if (out != null) {
            parent.stderr.println("merged results written to " + Merge.writeJson(out, m));
        }
        ResultJson r = m.result();
        return BenchmarkMain.verdict(RunResult.errorRateViolation(r.errorCount(),
                m.total().getTotalCount() + r.errorCount(), maxErrorRate), parent.stderr);
    }
}
