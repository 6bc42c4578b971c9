/// A request handler: synchronous, run on one of the server's worker threads.
///
/// Throw ``HTTPError`` to answer with a specific status; any other error answers 500
/// and is logged without the request's credentials.
public typealias HTTPHandler = @Sendable (HTTPRequest) throws -> HTTPResponse

/// Maps a method and a path to a handler.
///
/// Patterns are literal segments and `:name` parameters (`/api/v1/users/:id`).
/// A path no pattern matches is 404; a path that matches with another method is 405
/// with `Allow`. `HEAD` is answered by the `GET` handler (the server drops the body).
public struct Router: Sendable {
    private var exact: [String: [HTTPMethod: HTTPHandler]] = [:]
    private var parameterized: [(segments: [Segment], method: HTTPMethod, handler: HTTPHandler)] = []

    private enum Segment: Sendable, Equatable {
        case literal(Substring)
        case parameter(String)
    }

    /// What a method and path resolve to.
    public enum Resolution: Sendable {
        /// A handler, with the values of the pattern's parameters.
        case handler(HTTPHandler, parameters: [String: String])
        /// The path exists but not for this method.
        case methodNotAllowed(allowed: [HTTPMethod])
        /// No pattern matches the path.
        case notFound
    }

    /// Creates an empty router.
    public init() {}

    /// Adds a route. A later route for the same method and pattern replaces the earlier one.
    public mutating func add(_ method: HTTPMethod, _ pattern: String, _ handler: @escaping HTTPHandler) {
        let segments = Self.split(pattern).map { part -> Segment in
            part.hasPrefix(":") ? .parameter(String(part.dropFirst())) : .literal(part)
        }
        if segments.allSatisfy({ if case .literal = $0 { true } else { false } }) {
            exact[Self.normalized(pattern), default: [:]][method] = handler
        } else {
            parameterized.removeAll { $0.method == method && $0.segments == segments }
            parameterized.append((segments, method, handler))
        }
    }

    /// Adds a `GET` route.
    public mutating func get(_ pattern: String, _ handler: @escaping HTTPHandler) {
        add(.get, pattern, handler)
    }

    /// Adds a `POST` route.
    public mutating func post(_ pattern: String, _ handler: @escaping HTTPHandler) {
        add(.post, pattern, handler)
    }

    /// Adds a `DELETE` route.
    public mutating func delete(_ pattern: String, _ handler: @escaping HTTPHandler) {
        add(.delete, pattern, handler)
    }

    /// Finds the handler for a method and path.
    public func resolve(_ method: HTTPMethod, _ path: String) -> Resolution {
        let lookup = method == .head ? HTTPMethod.get : method
        if let methods = exact[path] {
            if let handler = methods[lookup] { return .handler(handler, parameters: [:]) }
            return .methodNotAllowed(allowed: Self.allowList(methods.keys))
        }
        let parts = Self.split(path)
        var allowed: [HTTPMethod] = []
        for route in parameterized {
            guard let parameters = Self.match(route.segments, parts) else { continue }
            if route.method == lookup { return .handler(route.handler, parameters: parameters) }
            allowed.append(route.method)
        }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed: Self.allowList(allowed))
    }

    /// Answers a request: runs the matching handler and turns every failure into the JSON error shape.
    public func respond(to request: HTTPRequest) -> (response: HTTPResponse, failure: (any Error)?) {
        switch resolve(request.method, request.path) {
        case .notFound:
            return (HTTPError.notFound(path: request.path).response, nil)
        case .methodNotAllowed(let allowed):
            return (HTTPError.methodNotAllowed(request.method, allowed: allowed).response, nil)
        case .handler(let handler, let parameters):
            var request = request
            request.pathParameters = parameters
            do {
                return (try handler(request), nil)
            } catch let error as HTTPError {
                return (error.response, nil)
            } catch {
                return (HTTPError.internalError.response, error)
            }
        }
    }

    private static func allowList(_ methods: some Sequence<HTTPMethod>) -> [HTTPMethod] {
        var list = Array(Set(methods))
        if list.contains(.get) && !list.contains(.head) { list.append(.head) }
        return list.sorted { $0.rawValue < $1.rawValue }
    }

    private static func match(_ segments: [Segment], _ parts: [Substring]) -> [String: String]? {
        guard segments.count == parts.count else { return nil }
        var parameters: [String: String] = [:]
        for (segment, part) in zip(segments, parts) {
            switch segment {
            case .literal(let literal):
                guard literal == part else { return nil }
            case .parameter(let name):
                guard !part.isEmpty else { return nil }
                parameters[name] = String(part)
            }
        }
        return parameters
    }

    private static func split(_ path: String) -> [Substring] {
        var parts = path.split(separator: "/", omittingEmptySubsequences: false)
        if parts.first == "" { parts.removeFirst() }
        return parts
    }

    private static func normalized(_ pattern: String) -> String {
        pattern.hasPrefix("/") ? pattern : "/" + pattern
    }
}
