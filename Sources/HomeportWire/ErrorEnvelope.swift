/// The one error shape of Homeport's own routes:
/// `{"error": {"code": "…", "message": "…"}}`.
///
/// `code` is stable and meant for programs; `message` is for people and may change.
public struct ErrorEnvelope: Codable, Hashable, Sendable {
    /// The error itself.
    public var error: Detail

    /// Creates an envelope around one error.
    public init(code: String, message: String, field: String? = nil) {
        self.error = Detail(code: code, message: message, field: field)
    }

    /// A machine-readable code and a human-readable message.
    public struct Detail: Codable, Hashable, Sendable {
        /// A stable, snake_case code such as `not_found`.
        public var code: String
        /// A sentence for people.
        public var message: String
        /// The request field the error is about, when it is about one.
        public var field: String?

        /// Creates an error detail.
        public init(code: String, message: String, field: String? = nil) {
            self.code = code
            self.message = message
            self.field = field
        }
    }
}
