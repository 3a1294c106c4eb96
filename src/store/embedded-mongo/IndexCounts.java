import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.bson.Document;

/**
 * Counts answered from an index, as MongoDB answers them without reading a document: an {@code aggregate} whose
 * pipeline is a {@code $match} then a {@code $group} whose accumulators are all {@code {$sum: <number>}}, grouped
 * under a constant (what the driver's {@code countDocuments} sends: {@code {_id: 1, n: {$sum: 1}}}) or by one field
 * ({@code {_id: "$status"}}). The library runs every aggregate over every document of the collection (about 0.6 s
 * for 100,000 messages on H2); a {@link SecondaryIndex} that holds the query and the grouped field counts its
 * entries instead ({@link SecondaryIndex#count}, which says when it can). Anything else is the library's.
 */
final class IndexCounts {

    /** Options of an aggregate that change its answer beyond the pipeline; with any of them the library answers. */
    private static final Set<String> DECLINED_OPTIONS = Set.of("explain", "collation", "hint", "let");

    private IndexCounts() {
    }

    /**
     * The reply to {@code command} when it is such an aggregate and an index of the collection counts it, else null.
     *
     * @param collections the database's collection of that name, or null when there is none
     * @param namespace the collection's full name, for the reply's cursor
     */
    static Document answer(String command, Document query, Function<String, MongoCollection<?>> collections, Function<String, String> namespace) {
        if (!command.equalsIgnoreCase("aggregate") || !(query.get(command) instanceof String collectionName)
            || !(query.get("pipeline") instanceof List<?> pipeline) || pipeline.size() != 2
            || query.keySet().stream().anyMatch(DECLINED_OPTIONS::contains)) {
            return null;
        }
        Document match = stage(pipeline.get(0), "$match");
        Document group = stage(pipeline.get(1), "$group");
        if (match == null || group == null || !group.containsKey("_id")) {
            return null;
        }
        Object id = group.get("_id");
        String field = id instanceof String ref && ref.startsWith("$") ? ref.substring(1) : null;
        if (id instanceof Document || id instanceof List || (field != null && (field.isEmpty() || field.startsWith("$")))) {
            return null;
        }
        Map<String, Number> sums = new LinkedHashMap<>();
        for (Map.Entry<String, Object> accumulator : group.entrySet()) {
            if (accumulator.getKey().equals("_id")) {
                continue;
            }
            if (!(accumulator.getValue() instanceof Document sum) || sum.size() != 1 || !(sum.get("$sum") instanceof Number each)) {
                return null;
            }
            sums.put(accumulator.getKey(), each);
        }
        MongoCollection<?> collection = collections.apply(collectionName);
        if (collection == null) {
            return null;
        }
        Map<Object, Long> counts = countByIndex(collection.getIndexes(), match, field);
        if (counts == null) {
            return null;
        }
        List<Document> groups = new ArrayList<>();
        counts.forEach((value, n) -> {
            Document out = new Document("_id", field == null ? id : value);
            sums.forEach((name, each) -> out.put(name, sum(n, each)));
            groups.add(out);
        });
        // An aggregate's reply with its whole answer in the first batch and no cursor left, as MongoDB gives it.
        Document cursor = new Document("id", 0L);
        cursor.put("ns", namespace.apply(collectionName));
        cursor.put("firstBatch", groups);
        Document reply = new Document("cursor", cursor);
        reply.put("ok", 1.0);
        return reply;
    }

    /** The first secondary index's counts of {@code match} by {@code field} ({@link SecondaryIndex#count}), or null. */
    private static <P> Map<Object, Long> countByIndex(List<Index<P>> indexes, Document match, String field) {
        for (Index<P> index : indexes) {
            if (index instanceof SecondaryIndex<P> secondary) {
                Map<Object, Long> counts = secondary.count(match, field);
                if (counts != null) {
                    return counts;
                }
            }
        }
        return null;
    }

    /** The stage's argument when {@code stage} is exactly {@code {<name>: {…}}}, else null. */
    private static Document stage(Object stage, String name) {
        return stage instanceof Document d && d.size() == 1 && d.get(name) instanceof Document argument ? argument : null;
    }

    /** {@code n} documents' {@code $sum} of {@code each}, typed as MongoDB types it (int, else long, else double). */
    private static Number sum(long n, Number each) {
        if (each instanceof Double || each instanceof Float) {
            return n * each.doubleValue();
        }
        long total = n * each.longValue();
        return total == (int) total && !(each instanceof Long) ? Integer.valueOf((int) total) : Long.valueOf(total);
    }
}
