package de.bwaldvogel.mongo.backend;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.exception.FailedToParseException;
import de.bwaldvogel.mongo.exception.MongoServerError;
import de.bwaldvogel.mongo.oplog.Oplog;

/**
 * The update command of the embedded database (one statement of it), copying only the top-level fields the update
 * names. It is in the library's package because the parts it reuses are package-private there: the update
 * operators ({@code FieldUpdates}), the check of an update's paths ({@code validateUpdateQuery}) and the
 * library's equality of values ({@code Utils.nullAwareEquals}).
 *
 * <p>The library's {@code AbstractMongoCollection.updateDocuments} makes four passes over the whole of every
 * document it updates: a deep copy to keep the old one, a second deep copy to build the new one, a deep equality
 * check to decide whether to write and a deep comparison of normalized copies to count it as modified. Under the
 * send benchmark that was about a third of the database's command handling, for messages whose updates change a
 * few of their fields. Here the new document is a new top-level map that shares every value of the old one, except
 * the values of the top-level fields the update's paths start with (and {@code $rename}'s targets), which are deep
 * copies before the library's own operators change them. So no value of the document found is changed, and only
 * those fields are compared: the others are the same instances.
 *
 * <p>The outcome is the library's: the same operators and errors, the same checks of unique indexes before anything
 * is stored, the same {@code n} and {@code nModified} (a change of a number's type only is written, and not counted
 * as modified), and an unchanged document is not written. One difference: the library writes a document whose
 * {@code _id} is not its first field on every update, changed or not, since it compares a copy with {@code _id}
 * moved first; here such a document is written only when it changed.
 *
 * <p>What it leaves to the library ({@link #update} answers null): replacement documents, and upserts that insert.
 */
public final class ChangedFieldsUpdate {

    /** How a backend keeps a changed document. */
    public enum Storage {
        /** The memory backend: the instance found is the one stored, and it is changed to the new document. */
        IN_PLACE,
        /**
         * The H2 backend: the instance found is the one stored (not a copy), and may be being encoded by the
         * background writer: it is never changed, and the new document takes its place in the map.
         */
        REPLACED
    }

    private ChangedFieldsUpdate() {
    }

    /**
     * Applies {@code update} (operators only) to the documents of {@code collection} that {@code selector} matches
     * (the first only unless {@code multi}), as the update command's statement asks.
     *
     * @return the statement's result ({@code n}, {@code nModified}), or null for what the library is left to do: a
     *     replacement document (or a mix of operators and fields, which it refuses), or an upsert that matched nothing
     * @throws MongoServerError as the library would: an unknown operator, conflicting paths, an operator refused by a
     *     value, a changed {@code _id}, a duplicate key in a unique index (nothing of that document is changed)
     */
    public static <P> Document update(AbstractMongoCollection<P> collection, Document selector, Document update, ArrayFilters arrayFilters,
                                      boolean multi, boolean upsert, Oplog oplog, Storage storage) {
        if (update.isEmpty() || !update.keySet().stream().allMatch(key -> key.startsWith("$"))) {
            return null;
        }
        Set<String> touched = null;
        boolean positional = false;
        Integer matchPosition = null;
        int matched = 0;
        List<Object> modifiedIds = new ArrayList<>();
        for (Document document : collection.queryDocuments(selector, null, 0, 0, 0, null)) {
            if (touched == null) {
                AbstractMongoCollection.validateUpdateQuery(update);
                touched = topLevelFields(update);
                positional = positional(update);
            }
            if (positional) {
                matchPosition = new DefaultQueryMatcher().matchPosition(document, selector);
            }
            if (apply(collection, document, update, touched, arrayFilters, matchPosition, storage)) {
                modifiedIds.add(document.get(collection.getIdField()));
            }
            matched++;
            if (!multi) {
                break;
            }
        }
        if (matched == 0 && upsert) {
            return null;
        }
        oplog.handleUpdate(collection.getFullName(), selector, update, modifiedIds);
        Document result = new Document();
        result.put("n", Integer.valueOf(matched));
        result.put("nModified", Integer.valueOf(modifiedIds.size()));
        return result;
    }

    /** Updates one document; whether it counts as modified (the library's {@code nullAwareEquals} of before and after). */
    private static <P> boolean apply(AbstractMongoCollection<P> collection, Document found, Document update, Set<String> touched,
                                     ArrayFilters arrayFilters, Integer matchPosition, Storage storage) {
        Document updated = found.clone();
        for (String field : touched) {
            if (updated.containsKey(field)) {
                updated.put(field, deepCopy(updated.get(field)));
            }
        }
        for (String operator : update.keySet()) {
            UpdateOperator updateOperator;
            try {
                updateOperator = UpdateOperator.fromValue(operator);
            } catch (IllegalArgumentException e) {
                throw new FailedToParseException("Unknown modifier: " + operator + ". Expected a valid update modifier or pipeline-style update specified as an array");
            }
            new FieldUpdates(updated, updateOperator, collection.getIdField(), false, matchPosition, arrayFilters)
                .apply((Document) update.get(operator), operator);
        }
        Utils.validateFieldNames(updated);

        boolean sameFields = sameOrder(found.keySet(), updated.keySet());
        boolean changed = !sameFields;
        boolean modified = !sameFields;
        for (String field : touched) {
            Object before = found.get(field);
            Object after = updated.get(field);
            changed |= !Objects.equals(before, after);
            modified |= !Utils.nullAwareEquals(before, after);
        }
        if (!changed) {
            return false;
        }
        List<Index<P>> indexes = collection.getIndexes();
        for (Index<P> index : indexes) {
            index.checkUpdate(found, updated, collection);
        }
        P position = positionOf(collection, found);
        for (Index<P> index : indexes) {
            index.updateInPlace(found, updated, position, collection);
        }
        if (collection.tracksDataSize()) {
            collection.updateDataSize(Utils.calculateSize(updated) - Utils.calculateSize(found));
        }
        if (storage == Storage.REPLACED) {
            collection.handleUpdate(position, found, updated);
        } else {
            found.keySet().retainAll(updated.keySet());
            found.putAll(updated);
        }
        return modified;
    }

    /** Whether two documents have the same fields in the same order (as {@code Document.equals} requires). */
    private static boolean sameOrder(Set<String> a, Set<String> b) {
        if (a.size() != b.size()) {
            return false;
        }
        Iterator<String> other = b.iterator();
        for (String field : a) {
            if (!field.equals(other.next())) {
                return false;
            }
        }
        return true;
    }

    /** The top-level fields an update's paths start with, and those {@code $rename} moves fields to. */
    private static Set<String> topLevelFields(Document update) {
        Set<String> fields = new LinkedHashSet<>();
        for (Map.Entry<String, Object> operator : update.entrySet()) {
            Document change = (Document) operator.getValue();
            for (Map.Entry<String, Object> path : change.entrySet()) {
                fields.add(topLevelField(path.getKey()));
                if (operator.getKey().equals("$rename") && path.getValue() instanceof String target) {
                    fields.add(topLevelField(target));
                }
            }
        }
        return fields;
    }

    private static String topLevelField(String path) {
        int dot = path.indexOf('.');
        return dot < 0 ? path : path.substring(0, dot);
    }

    /** Whether a path of the update has the positional operator {@code $}, which needs the matched array element. */
    private static boolean positional(Document update) {
        for (Object change : update.values()) {
            for (String path : ((Document) change).keySet()) {
                if (path.contains(".$")) {
                    return true;
                }
            }
        }
        return false;
    }

    /** The one position the collection's indexes give {@code document} (the library's {@code getSinglePosition}). */
    private static <P> P positionOf(AbstractMongoCollection<P> collection, Document document) {
        List<Index<P>> indexes = collection.getIndexes();
        if (indexes.isEmpty()) {
            return collection.findDocumentPosition(document);
        }
        Set<P> positions = new HashSet<>();
        for (Index<P> index : indexes) {
            P position = index.getPosition(document);
            if (position != null) {
                positions.add(position);
            }
        }
        return CollectionUtils.getSingleElement(positions);
    }

    /** A copy of {@code value} sharing nothing that can change: documents, lists and sets copied at every depth. */
    private static Object deepCopy(Object value) {
        if (value instanceof Document document) {
            return document.cloneDeeply();
        }
        if (value instanceof List<?> list) {
            List<Object> copy = new ArrayList<>(list.size());
            for (Object element : list) {
                copy.add(deepCopy(element));
            }
            return copy;
        }
        if (value instanceof Set<?> set) {
            Set<Object> copy = new LinkedHashSet<>();
            for (Object element : set) {
                copy.add(deepCopy(element));
            }
            return copy;
        }
        return value;
    }
}
