/// Values for an `IN (…)` list, a chunk at a time: 500 values a statement stays under every
/// backend's limit on parameters (SQLite's 32,766, PostgreSQL's 65,535) with room for the others.
package enum SQLList {
    /// The values in chunks of at most `size`, each with its placeholders (`$3, $4, …`) numbered
    /// from `first` (the statement's other parameters come before).
    package static func chunks<Value>(_ values: [Value], first: Int = 1, size: Int = 500) -> [(
        values: ArraySlice<Value>, placeholders: String
    )] {
        stride(from: 0, to: values.count, by: size).map { start in
            let chunk = values[start..<min(start + size, values.count)]
            return (chunk, (first..<(first + chunk.count)).map { "$\($0)" }.joined(separator: ", "))
        }
    }
}
