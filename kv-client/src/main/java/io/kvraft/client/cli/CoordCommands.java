package io.kvraft.client.cli;

import io.kvraft.client.KvClient;
import io.kvraft.client.LockInfo;
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

    /** A lock's holder as text (clients of this library use a UUID). */
    private static String holder(LockInfo info) {
        return new String(info.holder(), java.nio.charset.StandardCharsets.UTF_8);
    }

    @Command(name = "sequence", description = "Sequences: ranges of numbers never handed out twice.",
            subcommands = {SequenceGet.class})
    static final class Sequence {
        @ParentCommand
        KvCtl parent;
    }

    @Command(name = "lock", description = "Distributed locks: who holds what.", subcommands = {LockList.class, LockShow.class})
    static final class Lock {
        @ParentCommand
        KvCtl parent;
    }

    @Command(name = "list", description = {
            "Prints every lock (whose key starts with --prefix), free ones included, one per line:",
            "KEY<TAB>HOLDER (- when free)<TAB>TOKEN<TAB>COUNT<TAB>LEASE_LEFT_MS. Exit code 0 even when none match."})
    static final class LockList implements Callable<Integer> {
        @ParentCommand
        Lock lock;
        @Option(names = "--prefix", paramLabel = "PREFIX", description = "only keys that start with PREFIX")
        String prefix;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            KvCtl parent = lock.parent;
            try (KvClient c = parent.connect()) {
                for (LockInfo info : KvClient.sync(c.locks(prefix == null ? null : parent.bytes(prefix)))) {
                    spec.commandLine().getOut().println(parent.text(info.key()) + "\t"
                            + (info.free() ? "-" : holder(info)) + "\t" + info.token()
                            + "\t" + info.count() + "\t" + info.leaseLeftMs());
                }
                return 0;
            }
        }
    }

    @Command(name = "show", description = {
            "Prints the lock KEY: holder (- when free), fencing token, count of re-entrant acquisitions and the",
            "lease's time left, one per line. Exit code 1 when KEY was never locked."})
    static final class LockShow implements Callable<Integer> {
        @ParentCommand
        Lock lock;
        @Parameters(index = "0", paramLabel = "KEY")
        String key;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            KvCtl parent = lock.parent;
            try (KvClient c = parent.connect()) {
                LockInfo info = KvClient.sync(c.lockInfo(parent.bytes(key)));
                if (info == null) {
                    spec.commandLine().getErr().println("error: lock never taken");
                    return 1;
                }
                java.io.PrintWriter out = spec.commandLine().getOut();
                out.println("holder: " + (info.free() ? "-" : holder(info)));
                out.println("token: " + info.token());
                out.println("count: " + info.count());
                out.println("lease left ms: " + info.leaseLeftMs() + (info.free() ? "" : " of " + info.leaseMs()));
                return 0;
            }
        }
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
