package io.kvraft.client.cli;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvraft.client.KeyValue;
import io.kvraft.client.KvClient;
import io.kvraft.client.KvIterator;
import io.kvraft.client.ReadMode;
import io.kvraft.client.config.ClientConfig;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

import java.io.PrintWriter;
import java.util.Iterator;
import java.util.concurrent.Callable;

/** The range and read-modify-write verbs of the admin CLI: scan, delete-range, cas, put-if-absent. */
final class DataCommands {

    private DataCommands() {
    }

    /** The read mode of a {@code --read-mode} value (YAML spelling); null keeps the client's. */
    static ReadMode readMode(String value) {
        if (value == null) {
            return null;
        }
        try {
            return ReadMode.of(value);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--read-mode must be one of " + String.join(", ", ClientConfig.READ_MODES)
                    + ", got '" + value + "'");
        }
    }

    @Command(name = "scan", description = {
            "Prints the pairs of [START, END) in key order, one per line (KEY<TAB>VALUE), fetched a page at a time.",
            "An empty START or END (\"\") is unbounded: scan \"\" lists the whole store. Exit code 0 even when none match."})
    static final class Scan implements Callable<Integer> {
        @ParentCommand
        KvCtl parent;
        @Parameters(index = "0", paramLabel = "START", description = "first key (inclusive); \"\" = from the lowest key")
        String start;
        @Parameters(index = "1", paramLabel = "END", arity = "0..1", description = "end key (exclusive); omitted or \"\" = to the highest key")
        String end;
        @Option(names = "--limit", paramLabel = "N", description = "print at most N pairs (default: all)")
        Long limit;
        @Option(names = "--reverse", description = "descending key order, from just below END")
        boolean reverse;
        @Option(names = "--keys-only", description = "print keys only")
        boolean keysOnly;
        @Option(names = "--json", description = "print a JSON array of {\"key\", \"value\"} (text, or hex with --hex)")
        boolean json;
        @Option(names = "--page-size", paramLabel = "N", defaultValue = "1000", description = "pairs fetched per request (default: ${DEFAULT-VALUE})")
        int pageSize;
        @Option(names = "--read-mode", paramLabel = "MODE", description = "read_index, leader_lease, follower or stale (default: the config's readMode)")
        String readMode;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            if (limit != null && limit < 1) {
                throw new IllegalArgumentException("--limit must be at least 1, got " + limit);
            }
            if (pageSize < 1) {
                throw new IllegalArgumentException("--page-size must be at least 1, got " + pageSize);
            }
            ReadMode mode = readMode(readMode);
            try (KvClient root = parent.connect()) {
                KvClient c = mode == null ? root : root.withReadMode(mode);
                byte[] s = parent.bytes(start);
                byte[] e = end == null ? new byte[0] : parent.bytes(end);
                int page = (int) Math.min(pageSize, limit == null ? pageSize : limit);
                KvIterator it = reverse ? c.reverseIterator(s, e, page) : c.iterator(s, e, page);
                print(it, spec.commandLine().getOut());
                return 0;
            }
        }

        /** Streams the pairs: nothing holds more than one page. */
        private void print(Iterator<KeyValue> it, PrintWriter out) throws Exception {
            long max = limit == null ? Long.MAX_VALUE : limit;
            if (json) {
                JsonGenerator g = new ObjectMapper().getFactory().createGenerator(out);
                g.writeStartArray();
                for (long n = 0; n < max && it.hasNext(); n++) {
                    KeyValue kv = it.next();
                    g.writeStartObject();
                    g.writeStringField("key", parent.text(kv.key()));
                    if (!keysOnly) {
                        g.writeStringField("value", parent.text(kv.value()));
                    }
                    g.writeEndObject();
                }
                g.writeEndArray();
                g.flush();
                out.println();
                return;
            }
            for (long n = 0; n < max && it.hasNext(); n++) {
                KeyValue kv = it.next();
                out.println(keysOnly ? parent.text(kv.key()) : parent.text(kv.key()) + "\t" + parent.text(kv.value()));
            }
        }
    }

    @Command(name = "delete-range", description = {
            "Removes every key in [START, END): one log entry per region the range touches, not atomic across regions.",
            "Prints OK and the time it took.",
            "An empty START or END (\"\") is unbounded; delete-range \"\" \"\" empties the store and needs --yes."})
    static final class DeleteRange implements Callable<Integer> {
        @ParentCommand
        KvCtl parent;
        @Parameters(index = "0", paramLabel = "START", description = "first key (inclusive); \"\" = from the lowest key")
        String start;
        @Parameters(index = "1", paramLabel = "END", description = "end key (exclusive); \"\" = to the highest key")
        String end;
        @Option(names = "--yes", description = "confirm deleting the whole key space")
        boolean yes;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            if (start.isEmpty() && end.isEmpty() && !yes) {
                throw new IllegalArgumentException("delete-range \"\" \"\" deletes every key in the store; add --yes to do it");
            }
            try (KvClient c = parent.connect()) {
                long t0 = System.nanoTime();
                KvClient.sync(c.deleteRange(parent.bytes(start), parent.bytes(end)));
                spec.commandLine().getOut().printf("OK (%d ms)%n", (System.nanoTime() - t0) / 1_000_000);
                return 0;
            }
        }
    }

    @Command(name = "cas", description = {
            "Puts NEW under KEY if its value is EXPECT (or, with --expect-absent, if KEY is absent).",
            "Prints 'swapped' (exit 0) or, when the value differs, 'not swapped' (exit 1)."})
    static final class Cas implements Callable<Integer> {
        @ParentCommand
        KvCtl parent;
        @Parameters(index = "0", paramLabel = "KEY")
        String key;
        @Parameters(index = "1..*", paramLabel = "EXPECT NEW", arity = "1..2",
                description = "the expected value and the new one; with --expect-absent only NEW")
        java.util.List<String> values;
        @Option(names = "--expect-absent", description = "swap only if KEY has no value")
        boolean expectAbsent;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            int want = expectAbsent ? 1 : 2;
            if (values.size() != want) {
                throw new IllegalArgumentException(expectAbsent ? "cas --expect-absent takes KEY NEW"
                        : "cas takes KEY EXPECT NEW (or KEY NEW with --expect-absent)");
            }
            byte[] expect = expectAbsent ? null : parent.bytes(values.get(0));
            byte[] update = parent.bytes(values.get(want - 1));
            try (KvClient c = parent.connect()) {
                boolean swapped = KvClient.sync(c.compareAndPut(parent.bytes(key), expect, update));
                if (swapped) {
                    spec.commandLine().getOut().println("swapped");
                    return 0;
                }
                spec.commandLine().getErr().println("error: not swapped: the current value differs");
                return 1;
            }
        }
    }

    @Command(name = "append", description = {
            "Appends VALUE to the value of KEY (RheaKV's merge, without a separator); a KEY without a value",
            "takes VALUE. Prints 'OK'; fails (exit 1) when the result would pass the server's limits.maxValueBytes."})
    static final class Append implements Callable<Integer> {
        @ParentCommand
        KvCtl parent;
        @Parameters(index = "0", paramLabel = "KEY")
        String key;
        @Parameters(index = "1", paramLabel = "VALUE")
        String value;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            try (KvClient c = parent.connect()) {
                KvClient.sync(c.append(parent.bytes(key), parent.bytes(value)));
                spec.commandLine().getOut().println("OK");
                return 0;
            }
        }
    }

    @Command(name = "put-if-absent", description = {
            "Stores VALUE under KEY only if KEY has no value; prints 'OK' (exit 0),",
            "or the existing value on stdout with an error line (exit 1)."})
    static final class PutIfAbsent implements Callable<Integer> {
        @ParentCommand
        KvCtl parent;
        @Parameters(index = "0", paramLabel = "KEY")
        String key;
        @Parameters(index = "1", paramLabel = "VALUE")
        String value;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            try (KvClient c = parent.connect()) {
                byte[] existing = KvClient.sync(c.putIfAbsent(parent.bytes(key), parent.bytes(value)));
                if (existing == null) {
                    spec.commandLine().getOut().println("OK");
                    return 0;
                }
                spec.commandLine().getOut().println(parent.text(existing));
                spec.commandLine().getErr().println("error: key exists");
                return 1;
            }
        }
    }
}
