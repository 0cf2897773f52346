package io.kvraft.client.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code batch}: runs the commands of standard input one line at a time in this JVM, so a script that issues many
 * admin commands (a split every few seconds, say) pays for one JVM start, not one per command.
 */
@Command(name = "batch", mixinStandardHelpOptions = true, description = {
        "Runs commands read from standard input, one per line, as if each were given on the command line after this"
                + " CLI's options (--config, --servers, --hex apply to all). Arguments are separated by spaces (none"
                + " can hold one; use --hex for such keys); empty lines and lines starting with # are skipped.",
        "Exit code: 0 when every command succeeded, else the first failed command's."})
final class BatchCommand implements Callable<Integer> {

    @ParentCommand
    KvCtl parent;

    @Option(names = "--status", description = "after each command print a line '# exit N' (N: its exit code), for scripts"
            + " that wait for each command's end")
    boolean status;

    @Option(names = "--stop-on-error", description = "stop at the first command that fails")
    boolean stopOnError;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        int first = 0;
        BufferedReader in = new BufferedReader(new InputStreamReader(parent.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            String trimmed = line.strip();
            if (trimmed.isEmpty() || trimmed.startsWith("#")) {
                continue;
            }
            List<String> words = Arrays.asList(trimmed.split("\\s+"));
            int code;
            if (words.get(0).equals("batch")) {
                err.println("error: batch cannot run batch");
                code = 2;
            } else {
                List<String> args = new ArrayList<>(parent.globalOptions());
                args.addAll(words);
                code = KvCtl.run(args.toArray(String[]::new), parent.in, out, err);
            }
            if (status) {
                out.println("# exit " + code);
            }
            out.flush();
            if (code != 0 && first == 0) {
                first = code;
            }
            if (code != 0 && stopOnError) {
                break;
            }
        }
        return first;
    }
}
