package io.kvraft.common.rpc;

import java.io.PrintStream;

/**
 * Routes bolt's logging through slf4j like everything else. Left alone, bolt's logging library
 * writes files under ~/logs and prints a banner on stdout, which would corrupt the output of the
 * CLI and the benchmark report.
 */
public final class BoltLogging {

    private static boolean done;

    private BoltLogging() {
    }

    /** Call first thing in a main method, before any RPC class is used. */
    public static synchronized void init() {
        if (done) {
            return;
        }
        System.setProperty("sofa.middleware.log.disable", "true");
        PrintStream out = System.out;
        System.setOut(new PrintStream(java.io.OutputStream.nullOutputStream())); // it announces its choice on stdout once
        try {
            com.alipay.remoting.log.BoltLoggerFactory.getLogger("kv");
        } finally {
            System.setOut(out);
        }
        done = true;
    }
}
