/*
 * ARX's Flash on ARX's Adult table, timed the way benchmarks/optimal_vs_arx.py times privgate:
 * the figures that script sets privgate's per-cell times against (issue 18).
 *
 * Why a harness: the ARX figures must come from the same machine, the same load and the same
 * run as privgate's, not from a number quoted in an issue. The script compiles and runs this
 * file when it is given ARX's classes (--arx-classpath); see the docstring of
 * benchmarks/_optimal_arx.py for how ARX was built on this machine.
 *
 * What is timed per cell (k in 2, 5, 10, 50, 100; suppression limit 0 % and 2 %): one
 * ARXAnonymizer.anonymize(data, config) call with KAnonymity(k), the suppression limit and
 * ARX's loss metric (Metric.createLossMetric(), Flash: ARX's default optimal algorithm for a
 * lattice of this size). The CSV and the hierarchies are read once, before any timing (ARX's
 * anonymize() encodes the data itself, every call). Each cell runs once untimed (JIT warm-up),
 * then `rounds` timed rounds over all cells, alternating the cell order between rounds.
 *
 * Output: one line per timed run, "run <k> <limit> <ms>", then one line per cell,
 * "optimum <k> <limit> <levels joined by '/'> <suppressed records>".
 *
 * Usage: java -cp ARX_CLASSES:. ArxFlashAdult DATA_DIR ROUNDS
 */

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.AttributeType;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.DataHandle;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.metric.Metric;

public final class ArxFlashAdult {

    /** The quasi-identifiers in ARX's order, as benchmarks/_optimal_adult.py lists them. */
    private static final String[] QIS = {
        "sex", "age", "race", "marital-status", "education", "native-country", "workclass",
        "occupation",
    };
    private static final int[] KS = {2, 5, 10, 50, 100};
    private static final double[] LIMITS = {0.0, 0.02};

    private ArxFlashAdult() {}

    private static Data load(File dir) throws Exception {
        Data data = Data.create(new File(dir, "adult.csv"), StandardCharsets.UTF_8, ';');
        for (String qi : QIS) {
            File file = new File(dir, "adult_hierarchy_" + qi + ".csv");
            data.getDefinition().setAttributeType(qi, Hierarchy.create(file, StandardCharsets.UTF_8, ';'));
        }
        data.getDefinition().setAttributeType("salary-class", AttributeType.INSENSITIVE_ATTRIBUTE);
        return data;
    }

    private static ARXResult anonymize(Data data, int k, double limit) throws Exception {
        ARXConfiguration config = ARXConfiguration.create();
        config.addPrivacyModel(new KAnonymity(k));
        config.setSuppressionLimit(limit);
        config.setQualityModel(Metric.createLossMetric());
        data.getHandle().release(); // a Data can be anonymized again only once released
        return new ARXAnonymizer().anonymize(data, config);
    }

    private static String levels(ARXResult result) {
        int[] t = result.getGlobalOptimum().getTransformation();
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < t.length; i++) {
            out.append(i == 0 ? "" : "/").append(t[i]);
        }
        return out.toString();
    }

    private static int suppressed(ARXResult result) {
        DataHandle output = result.getOutput(false);
        int count = 0;
        for (int row = 0; row < output.getNumRows(); row++) {
            if (output.isOutlier(row)) {
                count++;
            }
        }
        return count;
    }

    public static void main(String[] args) throws Exception {
        File dir = new File(args[0]);
        int rounds = Integer.parseInt(args[1]);
        Data data = load(dir);
        List<int[]> cells = new ArrayList<>();
        for (int k : KS) {
            for (int s = 0; s < LIMITS.length; s++) {
                cells.add(new int[] {k, s});
            }
        }
        List<String> optima = new ArrayList<>();
        for (int[] cell : cells) { // untimed warm-up, and the optimum of each cell
            ARXResult result = anonymize(data, cell[0], LIMITS[cell[1]]);
            optima.add("optimum " + cell[0] + " " + LIMITS[cell[1]] + " " + levels(result) + " "
                    + suppressed(result));
        }
        for (int round = 0; round < rounds; round++) {
            for (int i = 0; i < cells.size(); i++) {
                int[] cell = cells.get(round % 2 == 0 ? i : cells.size() - 1 - i);
                data.getHandle().release();
                System.gc();
                long started = System.nanoTime();
                anonymize(data, cell[0], LIMITS[cell[1]]);
                double ms = (System.nanoTime() - started) / 1e6;
                System.out.println("run " + cell[0] + " " + LIMITS[cell[1]] + " " + ms);
            }
        }
        for (String line : optima) {
            System.out.println(line);
        }
    }
}
