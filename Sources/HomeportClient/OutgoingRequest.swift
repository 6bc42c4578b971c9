/// An API request about to go, as ``ClientConfiguration/requestHook`` sees it: what it asks of
/// which server, and the fields the app adds. The session token is not here; the client adds it
/// after the hook, to the address it verified.
public struct OutgoingRequest: Sendable {
    /// The method.
    public let method: String
    /// The API path (`/api/v1/…`).
    public let path: String
    /// The server it goes to (its key).
    public let server: String
    /// The fields the request carries besides the client's own: those its caller set
    /// (conditional and language ones, ``HomeportClient/extraHeaderNames``), which the hook may
    /// read but not change, and `Accept-Language`, which it may add.
    public var headers: [String: String]

    /// A request about to go.
    public init(method: String, path: String, server: String, headers: [String: String]) {
        self.method = method
        self.path = path
        self.server = server
        self.headers = headers
    }
}
