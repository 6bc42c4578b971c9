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
    private var parameterized: [(segments: [Segment], method: HTTPMethod, handler: HTTPHandler, pattern: String?)] = []

    private enum Segment: Sendable, Equatable {
        case literal(Substring)
        case parameter(String)
    }

    /// What a method and path resolve to.
    public enum Resolution: Sendable {
        /// A handler, with the values of the pattern's parameters, and the pattern to log instead
        /// of the path when the route's parameters are secret.
        case handler(HTTPHandler, parameters: [String: String], loggedAs: String? = nil)
        /// The path exists but not for this method.
        case methodNotAllowed(allowed: [HTTPMethod])
        /// No pattern matches the path.
        case notFound
    }

    /// Creates an empty router.
    public init() {}

    /// Adds a route. A later route for the same method and pattern replaces the earlier one.
    ///
    /// With `secretParameters`, the access log shows the pattern (`/reset/key/:key`) instead of
    /// the path, so a key carried in the path never reaches a log.
    public mutating func add(
        _ method: HTTPMethod, _ pattern: String, secretParameters: Bool = false, _ handler: @escaping HTTPHandler
    ) {
        let segments = Self.split(pattern).map { part -> Segment in
            part.hasPrefix(":") ? .parameter(String(part.dropFirst())) : .literal(part)
        }
        if segments.allSatisfy({ if case .literal = $0 { true } else { false } }) {
            exact[Self.normalized(pattern), default: [:]][method] = handler
        } else {
            parameterized.removeAll { $0.method == method && $0.segments == segments }
            parameterized.append((segments, method, handler, secretParameters ? pattern : nil))
        }
    }

    /// Adds a `GET` route.
    public mutating func get(_ pattern: String, secretParameters: Bool = false, _ handler: @escaping HTTPHandler) {
        add(.get, pattern, secretParameters: secretParameters, handler)
    }

    /// Adds a `POST` route.
    public mutating func post(_ pattern: String, secretParameters: Bool = false, _ handler: @escaping HTTPHandler) {
        add(.post, pattern, secretParameters: secretParameters, handler)
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
            if route.method == lookup {
                return .handler(route.handler, parameters: parameters, loggedAs: route.pattern)
            }
            allowed.append(route.method)
        }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed: Self.allowList(allowed))
    }

    /// What answering a request came to.
    public struct Answer: Sendable {
        /// The response to send.
        public var response: HTTPResponse
        /// An error a handler threw that was not an ``HTTPError`` (answered 500), for the log.
        public var failure: (any Error)?
        /// The path to write in the access log (the pattern, for routes with secret parameters).
        public var loggedPath: String
    }

    /// Answers a request: runs the matching handler and turns every failure into the JSON error shape.
    public func respond(to request: HTTPRequest) -> Answer {
        switch resolve(request.method, request.path) {
        case .notFound:
            return Answer(response: HTTPError.notFound(path: request.path).response, loggedPath: request.path)
        case .methodNotAllowed(let allowed):
            return Answer(
                response: HTTPError.methodNotAllowed(request.method, allowed: allowed).response,
                loggedPath: loggedPath(request.path))
        case .handler(let handler, let parameters, let pattern):
            var request = request
            request.pathParameters = parameters
            let logged = pattern ?? request.path
            do {
                return Answer(response: try handler(request), loggedPath: logged)
            } catch let error as HTTPError {
                return Answer(response: error.response, loggedPath: logged)
            } catch {
                return Answer(response: HTTPError.internalError.response, failure: error, loggedPath: logged)
            }
        }
    }

    /// The path as the access log may show it: the pattern when a route with secret parameters
    /// matches it (whatever the method), else the path itself.
    public func loggedPath(_ path: String) -> String {
        let parts = Self.split(path)
        for route in parameterized {
            if let pattern = route.pattern, Self.match(route.segments, parts) != nil { return pattern }
        }
        return path
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
