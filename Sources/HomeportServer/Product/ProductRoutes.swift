import HomeportHTTP

/// A product route's handler: the request and the signed-in caller; it never sees the token.
public typealias SignedInHandler = @Sendable (HTTPRequest, SignedIn) throws -> HTTPResponse

/// A handler of a route declared public: the request alone (no session is read for it).
public typealias PublicHandler = @Sendable (HTTPRequest) throws -> HTTPResponse

/// The routes a product declares, relative to `/api/v1` (`/books` is `/api/v1/books`).
///
/// Every route is signed-in unless declared with ``addPublic(_:_:placement:_:)``: it passes
/// through the API prefix's middleware (header-only token, a token sent twice refused,
/// `no-store`, the signed-in check) and its handler gets the ``SignedIn`` caller. Paths are
/// literal segments and `:name` parameters (`/books/:id`), read with
/// `request.parameter("id", as: Int64.self)`. A handler answers an `HTTPResponse`, or any
/// `Encodable` value, written as JSON with the route's `status` (`.ok` unless declared:
/// `api.post("/books", status: .created) { … }`). A route (or a group) declared
/// `requiring: "bookorbit:librarian"` is for that account group's members: 403 `forbidden`
/// for everyone else. Homeport's own paths (`/server-identity`, `/app-info`, `/account`,
/// `/admin`, `/auth`, `/push`, `/notifications`, `/invitations`, `/product`) cannot be taken.
/// A public route cannot sit in a group declared `requiring:` (it would answer everyone).
public struct ProductRoutes {
    /// What handlers work with.
    public let services: ProductServices

    struct Declared {
        var method: HTTPMethod
        var path: String
        var placement: HandlerPlacement
        var signedIn: SignedInHandler?
        var open: PublicHandler?
        /// Groups the caller must be in, every one (a route's own and its groups'): 403 otherwise.
        var required: [String] = []
    }
    private(set) var declared: [Declared] = []
    /// What ``group(_:requiring:_:)`` puts before the paths declared in it.
    private var prefix = ""
    /// The groups the routes declared in the current group require.
    private var required: [String] = []

    init(services: ProductServices) {
        self.services = services
    }

    /// Adds a signed-in route. With `requiring`, only members of that group reach the handler
    /// (everyone else gets 403 `forbidden`). `placement` `.pool` runs the handler off the worker
    /// threads (for work that spends CPU, such as hashing), with the connection suspended meanwhile.
    public mutating func add(
        _ method: HTTPMethod, _ path: String, requiring group: String? = nil, placement: HandlerPlacement = .worker,
        _ handler: @escaping SignedInHandler
    ) {
        declared.append(
            Declared(
                method: method, path: prefix + path, placement: placement, signedIn: handler,
                required: required + (group.map { [$0] } ?? [])))
    }

    /// Adds a route that needs no session, on purpose: no credential is read for it, and its
    /// answer is the same with or without one. Nothing may be signed-in under its path.
    public mutating func addPublic(
        _ method: HTTPMethod, _ path: String, placement: HandlerPlacement = .worker, _ handler: @escaping PublicHandler
    ) {
        declared.append(
            Declared(method: method, path: prefix + path, placement: placement, open: handler, required: required))
    }

    /// Adds a signed-in `GET` route (which answers `HEAD` too).
    public mutating func get(
        _ path: String = "", requiring group: String? = nil, placement: HandlerPlacement = .worker,
        _ handler: @escaping SignedInHandler
    ) {
        add(.get, path, requiring: group, placement: placement, handler)
    }

    /// Adds a signed-in `POST` route.
    public mutating func post(
        _ path: String = "", requiring group: String? = nil, placement: HandlerPlacement = .worker,
        _ handler: @escaping SignedInHandler
    ) {
        add(.post, path, requiring: group, placement: placement, handler)
    }

    /// Adds a signed-in `PUT` route.
    public mutating func put(
        _ path: String = "", requiring group: String? = nil, placement: HandlerPlacement = .worker,
        _ handler: @escaping SignedInHandler
    ) {
        add(.put, path, requiring: group, placement: placement, handler)
    }

    /// Adds a signed-in `PATCH` route.
    public mutating func patch(
        _ path: String = "", requiring group: String? = nil, placement: HandlerPlacement = .worker,
        _ handler: @escaping SignedInHandler
    ) {
        add(.patch, path, requiring: group, placement: placement, handler)
    }

    /// Adds a signed-in `DELETE` route.
    public mutating func delete(
        _ path: String = "", requiring group: String? = nil, placement: HandlerPlacement = .worker,
        _ handler: @escaping SignedInHandler
    ) {
        add(.delete, path, requiring: group, placement: placement, handler)
    }

    /// Declares the routes `body` adds under `prefix`: `api.group("/books/:id/loan") { loan in
    /// loan.get { … } }` is `GET /books/:id/loan`. Groups nest; a route at the group's own path
    /// leaves its path out (or gives `""`). With `requiring`, every route in it is for members
    /// of that account group only (as each route's own `requiring`, which adds to it); a public
    /// route declared in it is refused when the server starts, since it would answer everyone.
    public mutating func group(
        _ prefix: String, requiring group: String? = nil, _ body: (inout ProductRoutes) throws -> Void
    ) rethrows {
        let (outerPrefix, outerRequired) = (self.prefix, required)
        self.prefix += prefix
        if let group { required.append(group) }
        defer { (self.prefix, required) = (outerPrefix, outerRequired) }
        try body(&self)
    }

    /// Paths under `/api/v1` that are Homeport's.
    static let reserved = [
        "server-identity", "app-info", "account", "admin", "auth", "push", "notifications", "invitations", "product",
    ]

    /// The segments of a declared path, or a sentence saying what is wrong with it.
    static func segments(of path: String) throws -> [Substring] {
        guard path.hasPrefix("/"), path.count > 1, !path.hasSuffix("/") else {
            throw ConfigurationError(
                "a product route's path starts with / and does not end with one: not '\(path.prefix(80))'")
        }
        let segments = path.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        for segment in segments {
            let name = segment.hasPrefix(":") ? segment.dropFirst() : segment
            guard !name.isEmpty, segment != ".", segment != "..",
                name.utf8.allSatisfy({
                    (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
                        || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0)
                        || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "-")
                        || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".")
                })
            else {
                throw ConfigurationError(
                    "a product route's path is segments of letters, digits and -_. or :name parameters: not '\(path.prefix(80))'"
                )
            }
        }
        guard let first = segments.first, !first.hasPrefix(":"), !reserved.contains(first.lowercased()) else {
            throw ConfigurationError(
                "'\(path.prefix(80))' is under a path Homeport serves itself (/api/v1/"
                    + reserved.joined(separator: ", /api/v1/") + "); a product's routes start with a literal of its own"
            )
        }
        return segments
    }
}
