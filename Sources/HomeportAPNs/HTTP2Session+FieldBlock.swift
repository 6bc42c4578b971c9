import CNGHTTP2

extension HTTP2Session {
    /// Header fields laid out in one buffer, names and values back to back, with where each
    /// is: what nghttp2's name–value pairs point into. A block is filled once for the fields
    /// every request of an exchange shares, and refilled, its storage kept, for each request's own.
    struct FieldBlock {
        private(set) var bytes: [UInt8] = []
        private var spans: [(name: Range<Int>, value: Range<Int>, pseudo: Bool, flags: UInt8)] = []

        init(_ fields: [Field] = []) {
            replace(with: fields)
        }

        /// Lays out `fields` in place of what the block held.
        mutating func replace(with fields: [Field]) {
            bytes.removeAll(keepingCapacity: true)
            spans.removeAll(keepingCapacity: true)
            for field in fields {
                let nameStart = bytes.count
                bytes.append(contentsOf: field.name.utf8)
                let valueStart = bytes.count
                bytes.append(contentsOf: field.value.utf8)
                let flags = field.indexed ? NGHTTP2_NV_FLAG_NONE : NGHTTP2_NV_FLAG_NO_INDEX
                spans.append(
                    (
                        nameStart..<valueStart, valueStart..<bytes.count, field.name.utf8.first == UInt8(ascii: ":"),
                        UInt8(flags.rawValue)
                    )
                )
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
