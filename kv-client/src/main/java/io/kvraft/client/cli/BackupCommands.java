package io.kvraft.client.cli;

import io.kvraft.client.KvClient;
import io.kvraft.client.backup.Backup;
import io.kvraft.client.backup.BackupManifest;
import io.kvraft.client.backup.Restore;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/** The backup verbs of the admin CLI: backup DIR, backup verify DIR, restore DIR. */
final class BackupCommands {

    private BackupCommands() {
    }

    @Command(name = "backup", subcommands = Verify.class, mixinStandardHelpOptions = true, description = {
            "Backs the cluster up into DIR while it serves; 'backup verify DIR' checks a backup without a cluster.",
            "DIR must be absent or empty. Every region's data (its pairs, and its sequences' and locks' counters) is"
                    + " taken as of one applied index of that region, captured on its leader after every write"
                    + " acknowledged before, into portable files (region-N.kvb) and manifest.json, written last."
                    + " Consistent per region, not one cluster-wide instant.",
            "Progress lines go to stderr, the summary to stdout. Exit 0; 1 failed; 2 bad usage (e.g. DIR not empty);"
                    + " 3 no server answered."})
    static final class BackupCommand implements Callable<Integer> {
        @ParentCommand
        KvCtl parent;
        @Parameters(index = "0", arity = "0..1", paramLabel = "DIR", description = "new or empty directory")
        Path dir;
        @Option(names = "--rate-limit", paramLabel = "MB/s", defaultValue = "0",
                description = "read at most this many MB (10^6 bytes) of keys and values per second; 0 = unlimited (default)")
        double rateLimit;
        @Option(names = "--parallel", paramLabel = "N", defaultValue = "2", description = "regions read at once (default: ${DEFAULT-VALUE})")
        int parallel;
        @Option(names = "--page-size", paramLabel = "N", defaultValue = "1000",
                description = "pairs per request (default: ${DEFAULT-VALUE}; servers also end a page at limits.maxScanBytes)")
        int pageSize;
        @Option(names = "--quiet", description = "no progress lines")
        boolean quiet;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            if (dir == null) {
                throw new IllegalArgumentException("backup needs a directory: backup DIR (or backup verify DIR)");
            }
            Backup.Options options = new Backup.Options(rateLimit, parallel, pageSize, quiet ? 0 : 2000, 3);
            try (KvClient c = parent.connect()) {
                Backup.Result r = Backup.run(c, dir, options, spec.commandLine().getErr());
                BackupManifest m = r.manifest();
                spec.commandLine().getOut().printf("backup %s: %d regions, %,d keys, %,d sequence/lock records, %.1f MB in"
                                + " %.1f s (%.1f MB/s, %,.0f keys/s); cluster %s%n", dir, m.regions().size(), m.keys(),
                        m.systemRecords(), m.dataBytes() / 1e6, r.seconds(), r.megabytesPerSecond(), r.keysPerSecond(),
                        m.clusterId());
                return 0;
            }
        }
    }

    @Command(name = "verify", mixinStandardHelpOptions = true, description = {
            "Checks a backup without a cluster: exit 0 when it is whole, 1 with one line naming the bad file.",
            "Checks the manifest (ours, a known version, regions covering the whole key space once) and every region"
                    + " file (size, CRC32C, framing, key order and range, counts of pairs and of sequence/lock records)."})
    static final class Verify implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "DIR")
        Path dir;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            BackupManifest m = BackupManifest.verify(dir);
            spec.commandLine().getOut().printf("backup %s OK: %d regions, %,d keys, %,d sequence/lock records, %.1f MB;"
                            + " cluster %s, taken %s .. %s%n", dir, m.regions().size(), m.keys(), m.systemRecords(),
                    m.dataBytes() / 1e6, m.clusterId(), m.startedAt(), m.finishedAt());
            return 0;
        }
    }

    @Command(name = "restore", mixinStandardHelpOptions = true, description = {
            "Writes the backup in DIR into an empty cluster of any shape; --force into a non-empty one.",
            "Keys are routed by range, so the target may have any number of nodes, any regions and either engine. The"
                    + " whole backup is verified first (a corrupt one writes nothing), and a cluster holding any key is"
                    + " refused unless --force (then the backup's keys overwrite and other keys stay).",
            "Sequences continue after the backup's values and locks' fencing tokens above them (counters only move"
                    + " forward); locks held at the backup are not restored: every lock starts free.",
            "Progress lines go to stderr, the summary to stdout. Exit 0; 1 refused or failed; 2 bad usage;"
                    + " 3 no server answered."})
    static final class RestoreCommand implements Callable<Integer> {
        @ParentCommand
        KvCtl parent;
        @Parameters(index = "0", paramLabel = "DIR")
        Path dir;
        @Option(names = "--force", description = "restore into a cluster that already holds keys")
        boolean force;
        @Option(names = "--rate-limit", paramLabel = "MB/s", defaultValue = "0",
                description = "write at most this many MB of keys and values per second; 0 = unlimited (default)")
        double rateLimit;
        @Option(names = "--batch", paramLabel = "N", defaultValue = "1000", description = "pairs per batchPut (default: ${DEFAULT-VALUE})")
        int batch;
        @Option(names = "--inflight", paramLabel = "N", defaultValue = "8", description = "batchPuts in flight (default: ${DEFAULT-VALUE})")
        int inflight;
        @Option(names = "--quiet", description = "no progress lines")
        boolean quiet;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            Restore.Options options = new Restore.Options(rateLimit, force, batch, inflight, quiet ? 0 : 2000);
            try (KvClient c = parent.connect()) {
                Restore.Result r = Restore.run(c, dir, options, spec.commandLine().getErr());
                BackupManifest m = r.manifest();
                PrintWriter out = spec.commandLine().getOut();
                out.printf("restored %s: %d regions, %,d keys, %,d sequence/lock records, %.1f MB in %.1f s (%.1f MB/s,"
                                + " %,.0f keys/s); from cluster %s, taken %s .. %s%n", dir, m.regions().size(), m.keys(),
                        m.systemRecords(), m.dataBytes() / 1e6, r.seconds(), r.megabytesPerSecond(), r.keysPerSecond(),
                        m.clusterId(), m.startedAt(), m.finishedAt());
                return 0;
            }
        }
    }
}
