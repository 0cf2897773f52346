package io.kvraft.client.cli;

import io.kvraft.client.KvClient;
import io.kvraft.client.SequenceRange;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

import java.util.concurrent.Callable;

/** The coordination verbs of the admin CLI: sequences and locks. */
final class CoordCommands {

    private CoordCommands() {
    }

    @Command(name = "sequence", description = "Sequences: ranges of numbers never handed out twice.",
            subcommands = {SequenceGet.class})
    static final class Sequence {
        @ParentCommand
        KvCtl parent;
    }

    @Command(name = "get", description = {
            "Takes N numbers from the sequence KEY and prints the range's start (inclusive) and end (exclusive),",
            "tab-separated: START<TAB>END."})
    static final class SequenceGet implements Callable<Integer> {
        @ParentCommand
        Sequence sequence;
        @Parameters(index = "0", paramLabel = "KEY")
        String key;
        @Option(names = "--step", paramLabel = "N", defaultValue = "1", description = "how many numbers (default: ${DEFAULT-VALUE})")
        long step;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            if (step < 1) {
                throw new IllegalArgumentException("--step must be at least 1, got " + step);
            }
            KvCtl parent = sequence.parent;
            try (KvClient c = parent.connect()) {
                SequenceRange range = KvClient.sync(c.getSequence(parent.bytes(key), step));
                spec.commandLine().getOut().println(range.start() + "\t" + range.end());
                return 0;
            }
        }
    }
}
