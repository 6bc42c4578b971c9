/// Values for an `IN (…)` list, a chunk at a time: 500 values a statement stays under every
/// backend's limit on parameters (SQLite's 32,766, PostgreSQL's 65,535) with room for the others.
package enum SQLList {
    /// The values in chunks of at most `size`, each with its placeholders (`$3, $4, …`) numbered
    /// from `first` (the statement's other parameters come before).
    ///
    /// A chunk's list is as long as the next power of two (or `size`), its last value repeated to
    /// fill it: an `IN` list means the same with a value twice. Each length is a statement of its
    /// own, prepared and kept by every connection that runs it (SQLite keeps 108 KB for one of
    /// 500 values, and 23 MB for one of each length up to 500); this way there are ten.
    package static func chunks<Value>(_ values: [Value], first: Int = 1, size: Int = 500) -> [(
        values: [Value], placeholders: String
    )] {
        stride(from: 0, to: values.count, by: size).map { start in
            var chunk = Array(values[start..<min(start + size, values.count)])
            let length = min(size, paddedLength(chunk.count))
            if let last = chunk.last { chunk += repeatElement(last, count: length - chunk.count) }
            return (chunk, (first..<(first + chunk.count)).map { "$\($0)" }.joined(separator: ", "))
        }
    }

    /// The smallest power of two that is at least `count`.
    private static func paddedLength(_ count: Int) -> Int {
        var length = 1
        while length < count { length *= 2 }
        return length
    }
}
