package io.kvraft.client.cli;

import io.kvraft.client.KvClient;
import io.kvraft.client.KvClients;
import io.kvraft.client.admin.KvAdmin;
import io.kvraft.client.admin.RegionInfo;
import io.kvraft.common.KvException;
import io.kvraft.client.config.ClientConfig;
import io.kvraft.common.config.ConfigException;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * The admin CLI, etcdctl-like: {@code java -jar kv-client.jar --config conf/client.yaml get K}.
 * Exit code 0 on success; otherwise one line on stderr and 1 (operation failed), 2 (bad usage or
 * config) or 3 (cluster unreachable).
 */
@Command(name = "kv-client", mixinStandardHelpOptions = true, version = "kv-client 0.1.0",
        description = "Admin CLI of the replicated key-value store.",
        subcommands = {KvCtl.Put.class, KvCtl.Get.class, KvCtl.Delete.class, DataCommands.Scan.class,
                DataCommands.DeleteRange.class, DataCommands.Cas.class, DataCommands.PutIfAbsent.class,
                DataCommands.Append.class, RegionsCommand.class,
                TransferLeaderCommand.class, SplitCommand.class, MergeCommand.class, MoveReplicaCommand.class, ReplicaCommands.Rebuild.class, ReplicaCommands.Add.class,
                ReplicaCommands.Recover.class, ReplicaCommands.RecoverMap.class, RebalanceCommand.class,
                HealthCommand.class, StatusCommand.class,
                CoordCommands.Sequence.class, CoordCommands.Lock.class,
                BackupCommands.BackupCommand.class, BackupCommands.RestoreCommand.class, BatchCommand.class,
                NodeCommands.NodeCommand.class})
public final class KvCtl {

    @Option(names = "--config", paramLabel = "FILE", defaultValue = "conf/client.yaml",
            description = "client YAML (default: ${DEFAULT-VALUE})")
    Path config;

    @Option(names = "--servers", paramLabel = "HOST:PORT,...", split = ",",
            description = "servers to ask, instead of those in the config file (whose other settings, e.g. tls, still apply when it exists)")
    List<String> servers;

    @Option(names = "--hex", description = "keys and values are given and printed as hex")
    boolean hex;

    public static void main(String[] args) {
        if (System.getProperty("logback.configurationFile") == null) {
            System.setProperty("logback.configurationFile", "kvctl-logback.xml");
        }
        io.kvraft.common.rpc.BoltLogging.init();
        System.exit(run(args, new PrintWriter(System.out, true), new PrintWriter(System.err, true)));
    }

    /** Standard input, for {@code batch}. */
    java.io.InputStream in = System.in;

    /** Runs the CLI with the given streams; returns the exit code. */
    public static int run(String[] args, PrintWriter out, PrintWriter err) {
        return run(args, System.in, out, err);
    }

    /** Every subcommand takes --help (and -h) too, as the top command does: `kv-client regions --help` prints its usage. */
    private static void withHelpOptions(CommandLine cl) {
        for (CommandLine sub : cl.getSubcommands().values()) {
            if (!sub.getCommandSpec().mixinStandardHelpOptions()) {
                sub.getCommandSpec().mixinStandardHelpOptions(true);
            }
            withHelpOptions(sub);
        }
    }

    /** Runs the CLI with the given streams ({@code in} feeds {@code batch}); returns the exit code. */
    public static int run(String[] args, java.io.InputStream in, PrintWriter out, PrintWriter err) {
        KvCtl ctl = new KvCtl();
        ctl.in = in;
        CommandLine cl = new CommandLine(ctl);
        withHelpOptions(cl);
        cl.setOut(out);
        cl.setErr(err);
        cl.setExecutionExceptionHandler((e, cmd, parsed) -> {
            Throwable t = e instanceof java.util.concurrent.CompletionException && e.getCause() != null ? e.getCause() : e;
            if (t instanceof ConfigException) {
                err.println("error: " + t.getMessage());
                return 2;
            }
            if (t instanceof java.io.UncheckedIOException || t instanceof java.io.IOException) {
                err.println("error: " + t.getMessage());
                return 1;
            }
            if (t instanceof KvException kv) {
                err.println("error: " + kv.getMessage() + io.kvraft.common.logging.LogFile.hint());
                return kv.code() == io.kvraft.common.ErrorCode.UNAVAILABLE ? 3 : 1;
            }
            if (t instanceof IllegalArgumentException) {
                err.println("error: " + t.getMessage());
                return 2;
            }
            err.println("error: " + t);
            return 1;
        });
        return cl.execute(args);
    }

    /** This CLI's own options as given, for the commands {@code batch} runs. */
    List<String> globalOptions() {
        List<String> args = new java.util.ArrayList<>(List.of("--config", config.toString()));
        if (servers != null && !servers.isEmpty()) {
            args.add("--servers");
            args.add(String.join(",", servers));
        }
        if (hex) {
            args.add("--hex");
        }
        return args;
    }

    /** The config file (its servers replaced by --servers when given), or only --servers when there is no file. */
    ClientConfig clientConfig() {
        if (servers != null && !servers.isEmpty()) {
            return java.nio.file.Files.exists(config) ? ClientConfig.load(config).withServers(servers) : ClientConfig.of(servers);
        }
        return ClientConfig.load(config);
    }

    KvClient connect() {
        return connect(15_000L);
    }

    /** Connects; an operation (and reaching the cluster at all) gives up after at most {@code maxOperationMs}. */
    KvClient connect(long maxOperationMs) {
        return KvClients.connect(promptConfig(maxOperationMs));
    }

    /** The admin operations alone, for the admin verbs; connects as {@link #connect()} does. */
    KvAdmin admin() {
        return admin(15_000L);
    }

    /** As {@link #connect(long)}, the admin operations alone. */
    KvAdmin admin(long maxOperationMs) {
        return KvClients.admin(promptConfig(maxOperationMs));
    }

    /** The client config with its timeouts capped: the CLI should answer promptly when the cluster is down. */
    private ClientConfig promptConfig(long maxOperationMs) {
        ClientConfig cfg = clientConfig();
        return new ClientConfig(cfg.servers(), Math.min(cfg.requestTimeoutMs(), Math.min(3000L, maxOperationMs)),
                Math.min(cfg.operationTimeoutMs(), maxOperationMs), cfg.readMode(), cfg.batching(), cfg.tls());
    }

    byte[] bytes(String s) {
        return hex ? java.util.HexFormat.of().parseHex(s) : s.getBytes(StandardCharsets.UTF_8);
    }

    String text(byte[] b) {
        return hex ? java.util.HexFormat.of().formatHex(b) : new String(b, StandardCharsets.UTF_8);
    }

    static String hexKey(byte[] b) {
        return b.length == 0 ? "" : java.util.HexFormat.of().formatHex(b);
    }

    /** A region's range bound for a table: hex, or {@code none} (-inf or +inf) when it is empty. */
    static String bound(byte[] b, String none) {
        return b.length == 0 ? none : hexKey(b);
    }

    @Command(name = "put", description = "Stores VALUE under KEY.")
    static final class Put implements Callable<Integer> {
        @ParentCommand
        KvCtl parent;
        @CommandLine.Parameters(index = "0", paramLabel = "KEY")
        String key;
        @CommandLine.Parameters(index = "1", paramLabel = "VALUE")
        String value;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            try (KvClient c = parent.connect()) {
                c.put(parent.bytes(key), parent.bytes(value)).join();
                spec.commandLine().getOut().println("OK");
                return 0;
            }
        }
    }

    @Command(name = "get", description = "Prints the value of KEY (a linearizable read by default); exit code 1 if absent.")
    static final class Get implements Callable<Integer> {
        @ParentCommand
        KvCtl parent;
        @CommandLine.Parameters(index = "0", paramLabel = "KEY")
        String key;
        @Option(names = "--read-mode", paramLabel = "MODE", description = "read_index, leader_lease, follower or stale (default: the config's readMode)")
        String readMode;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            io.kvraft.client.ReadMode mode = DataCommands.readMode(readMode);
            try (KvClient root = parent.connect()) {
                KvClient c = mode == null ? root : root.withReadMode(mode);
                byte[] v = c.get(parent.bytes(key)).join();
                if (v == null) {
                    spec.commandLine().getErr().println("error: key not found");
                    return 1;
                }
                spec.commandLine().getOut().println(parent.text(v));
                return 0;
            }
        }
    }

    @Command(name = "delete", description = "Removes KEY; prints whether it existed.")
    static final class Delete implements Callable<Integer> {
        @ParentCommand
        KvCtl parent;
        @CommandLine.Parameters(index = "0", paramLabel = "KEY")
        String key;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            try (KvClient c = parent.connect()) {
                boolean existed = c.delete(parent.bytes(key)).join();
                spec.commandLine().getOut().println(existed ? "deleted" : "not found");
                return 0;
            }
        }
    }

    static List<RegionInfo> sorted(List<RegionInfo> regions) {
        RegionInfo[] a = regions.toArray(RegionInfo[]::new);
        Arrays.sort(a, (x, y) -> Integer.compare(x.id(), y.id()));
        return List.of(a);
    }
}
