package io.kvraft.server.launch;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * A local cluster of real server processes ({@code java ... ServerMain --config FILE}) on loopback,
 * used by the benchmark's embedded default and by process-level tests. Close stops every process
 * it started, by PID.
 */
public final class ProcessCluster implements AutoCloseable {

    /**
     * Starts one JVM per server config file, each with its data under {@code dataRoot}, and waits up
     * to {@code readyTimeout} until every region has a leader.
     */
    public static ProcessCluster start(List<Path> configFiles, Path dataRoot, List<String> extraJvmArgs,
                                       Duration readyTimeout) {
        throw new UnsupportedOperationException("not yet");
    }

    /** The servers' client addresses, host:port. */
    public List<String> servers() {
        throw new UnsupportedOperationException("not yet");
    }

    /** PIDs of the server processes, in config order. */
    public List<Long> pids() {
        throw new UnsupportedOperationException("not yet");
    }

    @Override
    public void close() {
    }
}
