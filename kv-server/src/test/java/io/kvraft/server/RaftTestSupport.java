package io.kvraft.server;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import com.alipay.sofa.jraft.Status;
import io.kvraft.server.region.Region;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/** Snapshots on demand, log capture and directory helpers for the snapshot and fault tests. */
final class RaftTestSupport {

    private RaftTestSupport() {
    }

    /** Takes a snapshot of every region of {@code server} (concurrently) and waits until all are saved. */
    static void snapshotAllRegions(KvServer server) throws Exception {
        List<CompletableFuture<Status>> done = new ArrayList<>();
        List<Integer> ids = new ArrayList<>();
        for (Region r : server.host().regions()) {
            CompletableFuture<Status> f = new CompletableFuture<>();
            r.node().snapshot(f::complete);
            done.add(f);
            ids.add(r.id());
        }
        for (int i = 0; i < done.size(); i++) {
            Status st = done.get(i).get(60, TimeUnit.SECONDS);
            if (!st.isOk()) {
                throw new AssertionError("snapshot of region " + ids.get(i) + " on " + server.config().endpoint() + ": " + st);
            }
        }
    }

    static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : (Iterable<Path>) walk.sorted(Comparator.reverseOrder())::iterator) {
                Files.delete(p);
            }
        }
    }

    /** Collects the formatted messages of one logger (and its children) while open. */
    static final class LogCapture extends AppenderBase<ILoggingEvent> implements AutoCloseable {
        private final Logger logger;
        private final List<String> lines = new CopyOnWriteArrayList<>();

        private LogCapture(String loggerName) {
            this.logger = (Logger) LoggerFactory.getLogger(loggerName);
            setContext(logger.getLoggerContext());
            start();
            logger.addAppender(this);
        }

        static LogCapture of(String loggerName) {
            return new LogCapture(loggerName);
        }

        @Override
        protected void append(ILoggingEvent e) {
            lines.add(e.getLevel() + " " + e.getFormattedMessage());
        }

        List<String> lines() {
            return List.copyOf(lines);
        }

        void clear() {
            lines.clear();
        }

        @Override
        public void close() {
            logger.detachAppender(this);
            stop();
        }
    }
}
