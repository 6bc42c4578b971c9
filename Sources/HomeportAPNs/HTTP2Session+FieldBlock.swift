import CNGHTTP2

extension HTTP2Session {
    /// Header fields laid out in one buffer, names and values back to back, with where each
    /// is: what nghttp2's name–value pairs point into. A block is filled once for the fields
    /// every request of an exchange shares, and refilled, its storage kept, for each request's own
    /// (field by field, from the request's own values: no field or joined string is made for it).
    struct FieldBlock {
        private(set) var bytes: [UInt8] = []
        private var spans: [(name: Range<Int>, value: Range<Int>, pseudo: Bool, flags: UInt8)] = []

        /// A block holding `fields`, in order.
        init(_ fields: [Field] = []) {
            for field in fields { append(field.name, field.value, indexed: field.indexed) }
        }

        /// Empties the block, keeping its storage for the next request's fields.
        mutating func removeAll() {
            bytes.removeAll(keepingCapacity: true)
            spans.removeAll(keepingCapacity: true)
        }

        /// Adds a field whose value is `prefix` followed by `value` (`/3/device/` and a token), and
        /// whether HPACK may keep it (see ``Field/indexed``).
        mutating func append(_ name: String, prefix: String = "", _ value: String, indexed: Bool = true) {
            append(name, indexed: indexed) { bytes in
                Self.append(prefix, to: &bytes)
                Self.append(value, to: &bytes)
            }
        }

        /// Adds a field whose value is `number` in decimal, written digit by digit (no string is
        /// made for it: a request has three).
        mutating func append(_ name: String, number: Int64) {
            append(name, indexed: true) { bytes in
                if number < 0 { bytes.append(UInt8(ascii: "-")) }
                var magnitude = number.magnitude
                let start = bytes.count
                repeat {
                    bytes.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
                    magnitude /= 10
                } while magnitude != 0
                bytes[start...].reverse()
            }
        }

        /// Adds a field named `name` whose value `value` writes.
        private mutating func append(_ name: String, indexed: Bool, value: (inout [UInt8]) -> Void) {
            let nameStart = bytes.count
            Self.append(name, to: &bytes)
            let valueStart = bytes.count
            value(&bytes)
            let flags = indexed ? NGHTTP2_NV_FLAG_NONE : NGHTTP2_NV_FLAG_NO_INDEX
            spans.append(
                (
                    nameStart..<valueStart, valueStart..<bytes.count, name.utf8.first == UInt8(ascii: ":"),
                    UInt8(flags.rawValue)
                ))
        }

        /// Copies a string's bytes at once where they lie together (a native string's always do).
        private static func append(_ text: String, to bytes: inout [UInt8]) {
            if text.utf8.withContiguousStorageIfAvailable({ bytes.append(contentsOf: $0) }) == nil {
                bytes.append(contentsOf: text.utf8)
            }
        }

        /// Appends the pairs of the block's pseudo-header fields (`pseudo`) or of its others, which
        /// point into `storage`: the block's ``bytes``, which must outlive their use.
        func append(pseudo: Bool, from storage: UnsafeBufferPointer<UInt8>, to pairs: inout [nghttp2_nv]) {
            // nghttp2 takes mutable pointers, and never writes through them.
            let base = UnsafeMutablePointer(mutating: storage.baseAddress)
            for span in spans where span.pseudo == pseudo {
                pairs.append(
                    nghttp2_nv(
                        name: base.map { $0 + span.name.lowerBound }, value: base.map { $0 + span.value.lowerBound },
                        namelen: span.name.count, valuelen: span.value.count, flags: span.flags))
            }
        }
    }
}
