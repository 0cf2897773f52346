package io.kvraft.server;

import com.alipay.sofa.jraft.util.NamedThreadFactory;
import io.netty.util.HashedWheelTimer;
import io.netty.util.Timer;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.concurrent.TimeUnit;

/**
 * A slower tick for bolt's timeout wheel. bolt (1.6.7) schedules the timeout of every call it sends on one netty
 * {@code HashedWheelTimer} per JVM ({@code com.alipay.remoting.TimerHolder}) whose 10 ms tick is fixed in its code:
 * from a node's first call on, that wheel's thread wakes 100 times a second for the life of the process, busy or
 * idle: most of what an idle node spends.
 *
 * <p>With the default settings no call a node sends times out in under 150 ms (jraft's heartbeats after half the
 * election timeout, 150 ms for a split's first campaign; node beats after their interval, 1 s; everything else after a
 * second or more), and a timeout only ends a call that has failed anyway. So a node gives bolt a wheel with a 100 ms
 * tick before it sends anything: a timeout fires up to 100 ms late instead of 10, and the wheel wakes 10 times a
 * second.
 *
 * <p>bolt has no setting for the tick, and its holder's field is {@code static final}, which reflection cannot
 * write on Java 17: it is written with {@code sun.misc.Unsafe} (module jdk.unsupported, which netty and jraft use
 * too), once, before the field is read by any call. Written by hand because no library sets another library's
 * constant. From Java 24 on, that use of Unsafe prints a warning on the console, so there the node keeps bolt's
 * wheel; it also keeps it, and logs why once, when bolt's class is not as this code expects.
 */
public final class BoltWheel {

    static final long TICK_MS = 100;
    static final String THREAD_NAME = "bolt-wheel-100ms";
    private static final String HOLDER = "com.alipay.remoting.TimerHolder$DefaultInstance";
    private static final String BOLTS_THREAD = "DefaultTimer10";

    private static volatile Timer installed;

    private BoltWheel() {
    }

    /** The wheel this JVM gave bolt, or null when bolt keeps its own. */
    static Timer installed() {
        return installed;
    }

    /**
     * Gives bolt the slower wheel; call before the JVM's first bolt call (first thing in main). Returns why not
     * when bolt keeps its own wheel, or null.
     */
    public static synchronized String apply() {
        if (installed != null) {
            return null;
        }
        if (Runtime.version().feature() >= 24) {
            return "Java " + Runtime.version().feature() + " warns on sun.misc.Unsafe's field access";
        }
        if (Thread.getAllStackTraces().keySet().stream().anyMatch(t -> t.getName().startsWith(BOLTS_THREAD))) {
            return "bolt's wheel is already running";
        }
        try {
            Field field = Class.forName(HOLDER).getDeclaredField("INSTANCE");
            if (!Modifier.isStatic(field.getModifiers()) || field.getType() != Timer.class) {
                return HOLDER + ".INSTANCE is not a static netty Timer";
            }
            Field theUnsafe = Class.forName("sun.misc.Unsafe").getDeclaredField("theUnsafe");
            theUnsafe.setAccessible(true);
            sun.misc.Unsafe unsafe = (sun.misc.Unsafe) theUnsafe.get(null);
            Object base = unsafe.staticFieldBase(field);
            long offset = unsafe.staticFieldOffset(field);
            Timer bolts = (Timer) unsafe.getObjectVolatile(base, offset);
            Timer ours = new HashedWheelTimer(new NamedThreadFactory(THREAD_NAME + "-", true), TICK_MS,
                    TimeUnit.MILLISECONDS);
            unsafe.putObjectVolatile(base, offset, ours);
            bolts.stop(); // never started (it starts on its first timeout): no thread to end
            installed = ours;
            return null;
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            return e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }
}
