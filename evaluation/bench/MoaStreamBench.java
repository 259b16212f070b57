import com.yahoo.labs.samoa.instances.Instance;
import java.lang.management.ManagementFactory;
import moa.options.ClassOption;
import moa.options.OptionHandler;
import moa.streams.InstanceStream;

/**
 * Instances per second of MOA's own stream generators.
 *
 * Usage: java -cp moa.jar:. MoaStreamBench N REPEATS WARMUP CLI [CLI ...]
 * where each CLI is a MOA stream command line such as "generators.LEDGeneratorDrift -n 10 -d 4".
 * For each stream: WARMUP instances to let the JIT compile the hot path, then REPEATS timed runs
 * of N instances, each on a freshly built stream. Prints one JSON list on stdout with, per
 * repeat, the wall time and the CPU time of the timing thread (as MOA's own MeasureStreamSpeed
 * does; GC and JIT threads are not counted, which can only favour MOA).
 */
public class MoaStreamBench {

    static InstanceStream build(String cli) throws Exception {
        InstanceStream stream =
            (InstanceStream) ClassOption.cliStringToObject(cli, InstanceStream.class, null);
        ((OptionHandler) stream).prepareForUse();
        return stream;
    }

    /** Draws n instances and folds them into a checksum, so the JIT cannot drop the work. */
    static double draw(InstanceStream stream, long n) {
        double checksum = 0.0;
        for (long i = 0; i < n; i++) {
            Instance inst = stream.nextInstance().getData();
            checksum += inst.classValue() + inst.value(0);
        }
        return checksum;
    }

    static long threadCpuNanos() {
        return ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
    }

    static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    public static void main(String[] args) throws Exception {
        long n = Long.parseLong(args[0]);
        int repeats = Integer.parseInt(args[1]);
        long warmup = Long.parseLong(args[2]);
        StringBuilder out = new StringBuilder("[");
        for (int a = 3; a < args.length; a++) {
            String cli = args[a];
            double checksum = draw(build(cli), warmup);
            StringBuilder seconds = new StringBuilder("[");
            StringBuilder cpuSeconds = new StringBuilder("[");
            for (int r = 0; r < repeats; r++) {
                InstanceStream stream = build(cli);
                long cpuStart = threadCpuNanos();
                long start = System.nanoTime();
                checksum += draw(stream, n);
                long stop = System.nanoTime();
                long cpuStop = threadCpuNanos();
                seconds.append(r == 0 ? "" : ", ").append((stop - start) * 1e-9);
                cpuSeconds.append(r == 0 ? "" : ", ").append((cpuStop - cpuStart) * 1e-9);
            }
            seconds.append("]");
            cpuSeconds.append("]");
            out.append(a == 3 ? "" : ", ")
                .append("{\"cli\": ").append(quote(cli))
                .append(", \"n_instances\": ").append(n)
                .append(", \"seconds\": ").append(seconds)
                .append(", \"cpu_seconds\": ").append(cpuSeconds)
                .append(", \"checksum\": ").append(checksum).append("}");
        }
        System.out.println(out.append("]"));
    }
}
