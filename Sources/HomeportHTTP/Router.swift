/// Maps a method and a path to a handler, through the middleware of the route's group.
///
/// Patterns are literal segments and `:name` parameters (`/api/v1/users/:id`).
/// A path no pattern matches is 404; a path that matches with another method is 405
/// with `Allow`. `HEAD` is answered by the `GET` handler (the server drops the body).
///
/// A **group** claims a path prefix and the middleware every route under it passes through
/// (see ``group(_:middleware:routes:)``). The claim covers each route whose path falls under
/// the prefix, however the route is added, so a new route cannot skip its group's checks by
/// forgetting a call; the longest claiming prefix wins.
package struct Router<Context: HTTPRequestContext>: HTTPResponder, RouterMethods {
    private var exact: [String: [HTTPMethod: Route<Context>]] = [:]
    private var parameterized: [(segments: [Segment], method: HTTPMethod, route: Route<Context>)] = []
    private var groups: [(prefix: [Substring], middleware: [any HTTPMiddleware<Context>])] = []
    private var secretPrefixes: [[Substring]] = []
    /// Answers a request from its head, before its body is read (a credential checked first,
    /// so that a stranger's large body is never read); `nil` (the default) answers none.
    package var headCheck: (@Sendable (HTTPRequest) -> HTTPError?)?

    private enum Segment: Sendable, Equatable {
        case literal(Substring)
        case parameter(String)

        /// The segment as written in the pattern.
        var text: Substring {
            switch self {
            case .literal(let literal): literal
            case .parameter(let name): Substring(":" + name)
            }
        }
    }

    /// What a method and path resolve to.
    package enum Resolution: Sendable {
        /// A route (its handler wrapped in its group's middleware), with the values of the
        /// pattern's parameters.
        case handler(Route<Context>, parameters: [String: String])
        /// The path exists but not for this method.
        case methodNotAllowed(allowed: [HTTPMethod])
        /// No pattern matches the path.
        case notFound
    }

    /// Creates an empty router.
    package init() {}

    /// ``headCheck``'s answer.
    package func checkHead(_ head: HTTPRequest) -> HTTPError? { headCheck?(head) }

    /// Whether a ``headCheck`` is set.
    package var checksHeads: Bool { headCheck != nil }

    /// Claims `prefix` for a group: every route whose path is `prefix` or lies under it passes
    /// through `middleware` (the first outermost), then adds the group's routes, whose patterns
    /// are relative to the prefix.
    ///
    /// Declare a group before any route under its prefix. A more specific group (a longer
    /// prefix) takes its routes from a broader one, with only its own middleware.
    package mutating func group(
        _ prefix: String, middleware: [any HTTPMiddleware<Context>],
        routes: (inout RouterGroup<Context>) -> Void = { _ in }
    ) {
        let segments = Self.split(prefix)
        precondition(!groups.contains { $0.prefix == segments }, "the group \(prefix) is declared twice")
        // A route already added under the prefix got its middleware from a broader group (or none):
        // declaring this group now would leave that route outside it.
        let existing = exact.keys.map { Self.split($0) } + parameterized.map { $0.segments.map(\.text) }
        precondition(
            !existing.contains { Self.isUnder($0, segments) && claimLength($0) < segments.count },
            "declare the group \(prefix) before the routes under it")
        groups.append((segments, middleware))
        var group = RouterGroup<Context>(prefix: Self.normalized(prefix))
        routes(&group)
        for route in group.routes { add(route.method, route.pattern, placement: route.placement, route.handler) }
    }

    /// Writes every path under `prefix` to the access log as `prefix/***`, whatever the outcome
    /// (a route's answer, 404, 405 or 413), so a secret carried in such a path (a reset key in a
    /// link) never reaches a log. Extra or repeated slashes, `.` segments and letter case do not
    /// escape the mask.
    package mutating func logsSecrets(under prefix: String) {
        secretPrefixes.append(Self.split(Self.canonical(prefix)))
    }

    /// Adds a route. A later route for the same method and pattern replaces the earlier one.
    package mutating func add(
        _ method: HTTPMethod, _ pattern: String, placement: HandlerPlacement,
        _ handler: @escaping HTTPHandler<Context>
    ) {
        let segments = Self.split(pattern).map { part -> Segment in
            part.hasPrefix(":") ? .parameter(String(part.dropFirst())) : .literal(part)
        }
        let route = Route(handler: middleware(for: segments.map(\.text)).wrapping(handler), placement: placement)
        if segments.allSatisfy({ if case .literal = $0 { true } else { false } }) {
            exact[Self.normalized(pattern), default: [:]][method] = route
        } else {
            parameterized.removeAll { $0.method == method && $0.segments == segments }
            parameterized.append((segments, method, route))
        }
    }

    /// Every route as `METHOD /pattern` (parameters as `:name`), sorted: what the router serves,
    /// for documentation and the tests that keep the documentation true.
    package var routeTable: [String] {
        let literal = exact.flatMap { path, methods in methods.keys.map { "\($0.rawValue) \(path)" } }
        let patterns = parameterized.map { "\($0.method.rawValue) /" + $0.segments.map(\.text).joined(separator: "/") }
        return (literal + patterns).sorted()
    }

    /// Finds the handler for a method and path.
    package func resolve(_ method: HTTPMethod, _ path: String) -> Resolution {
        resolveRoute(method, path).resolution
    }

    /// The resolution, and whether the path is a literal route's (which carries no secret).
    private func resolveRoute(_ method: HTTPMethod, _ path: String) -> (resolution: Resolution, literal: Bool) {
        let lookup = method == .head ? HTTPMethod.get : method
        if let methods = exact[path] {
            if let route = methods[lookup] { return (.handler(route, parameters: [:]), true) }
            return (.methodNotAllowed(allowed: Self.allowList(methods.keys)), true)
        }
        return (resolvePattern(lookup, path), false)
    }

    private func resolvePattern(_ lookup: HTTPMethod, _ path: String) -> Resolution {
        let parts = Self.split(path)
        var allowed: [HTTPMethod] = []
        for route in parameterized {
            guard let parameters = Self.match(route.segments, parts) else { continue }
            if route.method == lookup { return .handler(route.route, parameters: parameters) }
            allowed.append(route.method)
        }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed: Self.allowList(allowed))
    }

    /// Answers a request: runs the matching handler through its group's middleware and turns
    /// every failure into the JSON error shape. A ``HandlerPlacement/pool`` route's handler does
    /// not run here: the answer carries it as ``HTTPAnswer/deferred``, for the server to run on
    /// its pool.
    package func respond(to request: HTTPRequest) -> HTTPAnswer {
        let (resolution, literal) = resolveRoute(request.method, request.path)
        // A literal route's path carries no secret: only other paths are checked against the masks.
        let logged = literal ? request.path : loggedPath(request.path)
        switch resolution {
        case .notFound:
            return HTTPAnswer(response: HTTPError.notFound(path: request.path).response, loggedPath: logged)
        case .methodNotAllowed(let allowed):
            return HTTPAnswer(
                response: HTTPError.methodNotAllowed(request.method, allowed: allowed).response, loggedPath: logged)
        case .handler(let route, let parameters):
            var request = request
            request.pathParameters = parameters
            guard route.placement == .worker else {
                let request = request
                var answer = HTTPAnswer(response: HTTPError.internalError.response, loggedPath: logged)
                answer.deferred = { Self.run(route.handler, request, logged) }
                return answer
            }
            return Self.run(route.handler, request, logged)
        }
    }

    private static func run(_ handler: HTTPHandler<Context>, _ request: HTTPRequest, _ logged: String) -> HTTPAnswer {
        do {
            return HTTPAnswer(response: try handler(request, Context()), loggedPath: logged)
        } catch let error as HTTPError {
            return HTTPAnswer(response: error.response, loggedPath: logged)
        } catch {
            return HTTPAnswer(response: HTTPError.internalError.response, failure: error, loggedPath: logged)
        }
    }

    /// The path as the access log may show it: `prefix/***` under a secret prefix, else the path.
    package func loggedPath(_ path: String) -> String {
        guard !secretPrefixes.isEmpty else { return path }
        let parts = Self.split(Self.canonical(path))
        for prefix in secretPrefixes where Self.isUnder(parts, prefix) {
            return "/" + prefix.joined(separator: "/") + "/***"
        }
        return path
    }

    /// The prefix of the group with the longest prefix covering `path`, or `other`.
    package func group(of path: String) -> String {
        let parts = Self.split(path)
        guard
            let prefix = groups.filter({ Self.isUnder(parts, $0.prefix) }).max(by: { $0.prefix.count < $1.prefix.count }
            )?.prefix
        else { return "other" }
        return "/" + prefix.joined(separator: "/")
    }

    /// The middleware of the group with the longest prefix covering `segments`.
    private func middleware(for segments: [Substring]) -> [any HTTPMiddleware<Context>] {
        groups.filter { Self.isUnder(segments, $0.prefix) }.max { $0.prefix.count < $1.prefix.count }?.middleware
            ?? []
    }

    /// The length of the longest group prefix covering `segments` (0 for none).
    private func claimLength(_ segments: [Substring]) -> Int {
        groups.filter { Self.isUnder(segments, $0.prefix) }.map(\.prefix.count).max() ?? 0
    }

    private static func isUnder(_ path: [Substring], _ prefix: [Substring]) -> Bool {
        path.count >= prefix.count && zip(path, prefix).allSatisfy { $0 == $1 }
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

    static func split(_ path: String) -> [Substring] {
        var parts = path.split(separator: "/", omittingEmptySubsequences: false)
        if parts.first == "" { parts.removeFirst() }
        return parts
    }

    /// The path lowercased, without empty and `.` segments: only for deciding what to mask.
    private static func canonical(_ path: String) -> String {
        "/" + path.lowercased().split(separator: "/").filter { $0 != "." }.joined(separator: "/")
    }

    private static func normalized(_ pattern: String) -> String {
        pattern.hasPrefix("/") ? pattern : "/" + pattern
    }
}

/// The routes of one group, with patterns relative to its prefix.
package struct RouterGroup<Context: HTTPRequestContext>: RouterMethods {
    /// The group's prefix.
    package let prefix: String
    fileprivate var routes:
        [(method: HTTPMethod, pattern: String, placement: HandlerPlacement, handler: HTTPHandler<Context>)] = []

    fileprivate init(prefix: String) {
        self.prefix = prefix
    }

    /// Adds a route at `prefix + pattern` (`""` is the prefix itself).
    package mutating func add(
        _ method: HTTPMethod, _ pattern: String, placement: HandlerPlacement,
        _ handler: @escaping HTTPHandler<Context>
    ) {
        routes.append((method, prefix + pattern, placement, handler))
    }
}

/// What routes are added through: a ``Router``, or a ``RouterGroup`` inside one.
package protocol RouterMethods<Context> {
    /// The request context the handlers get.
    associatedtype Context: HTTPRequestContext
    /// Adds a route for `method` at `pattern`, its handler run where `placement` says.
    mutating func add(
        _ method: HTTPMethod, _ pattern: String, placement: HandlerPlacement,
        _ handler: @escaping HTTPHandler<Context>)
}

extension RouterMethods {
    /// Adds a route for `method` at `pattern`, run on the worker thread.
    package mutating func add(_ method: HTTPMethod, _ pattern: String, _ handler: @escaping HTTPHandler<Context>) {
        add(method, pattern, placement: .worker, handler)
    }

    /// Adds a `GET` route (which answers `HEAD` too).
    package mutating func get(
        _ pattern: String, placement: HandlerPlacement = .worker, _ handler: @escaping HTTPHandler<Context>
    ) {
        add(.get, pattern, placement: placement, handler)
    }

    /// Adds a `POST` route.
    package mutating func post(
        _ pattern: String, placement: HandlerPlacement = .worker, _ handler: @escaping HTTPHandler<Context>
    ) {
        add(.post, pattern, placement: placement, handler)
    }

    /// Adds a `PUT` route.
    package mutating func put(
        _ pattern: String, placement: HandlerPlacement = .worker, _ handler: @escaping HTTPHandler<Context>
    ) {
        add(.put, pattern, placement: placement, handler)
    }

    /// Adds a `DELETE` route.
    package mutating func delete(
        _ pattern: String, placement: HandlerPlacement = .worker, _ handler: @escaping HTTPHandler<Context>
    ) {
        add(.delete, pattern, placement: placement, handler)
    }
}

/// Where a route's handler runs.
public enum HandlerPlacement: Sendable, Equatable {
    /// On the worker thread that read the request: for handlers that answer in microseconds.
    case worker
    /// On the server's pool of a few threads, the connection suspended meanwhile: for handlers
    /// that spend CPU (a password hash), so that they never hold a worker thread that everyone
    /// else's requests need. When the pool's queue is full, the request is answered 503 at once.
    case pool
}

/// A route as the router keeps it: its handler, wrapped in its group's middleware, and where it
/// runs.
package struct Route<Context: HTTPRequestContext>: Sendable {
    /// The handler, wrapped in the middleware of the route's group.
    package let handler: HTTPHandler<Context>
    /// Where the handler runs.
    package let placement: HandlerPlacement
}

/// Answers requests: what ``HTTPServer`` calls for each complete request.
package protocol HTTPResponder: Sendable {
    /// The answer to a complete request.
    func respond(to request: HTTPRequest) -> HTTPAnswer
    /// The path the access log may show for `path` (for requests refused before a route ran).
    func loggedPath(_ path: String) -> String
    /// The route group `path` falls in (its prefix), for metrics; `other` outside every group.
    func group(of path: String) -> String
    /// The answer to a request from its head alone (method, path, query, headers, client; an
    /// empty body), given before a byte of the body is read; `nil` reads the body and answers
    /// as usual.
    func checkHead(_ head: HTTPRequest) -> HTTPError?
    /// Whether ``checkHead(_:)`` may answer at all (the server builds the head only then).
    var checksHeads: Bool { get }
}

extension HTTPResponder {
    /// Every path in one group, `other`.
    package func group(of path: String) -> String { "other" }
    /// No answer from the head alone.
    package func checkHead(_ head: HTTPRequest) -> HTTPError? { nil }
    /// No check of heads.
    package var checksHeads: Bool { false }
}

/// What answering a request came to.
package struct HTTPAnswer: Sendable {
    /// The response to send.
    package var response: HTTPResponse
    /// An error a handler threw that was not an ``HTTPError`` (answered 500), for the log.
    package var failure: (any Error)?
    /// The path to write in the access log (masked under a secret prefix).
    package var loggedPath: String
    /// Set for a ``HandlerPlacement/pool`` route: the work that makes the real answer, for the
    /// server to run off its worker thread (``response`` is then unused). ``settled()`` runs it
    /// in place.
    package var deferred: (@Sendable () -> HTTPAnswer)?

    /// Creates an answer.
    package init(response: HTTPResponse, failure: (any Error)? = nil, loggedPath: String) {
        self.response = response
        self.failure = failure
        self.loggedPath = loggedPath
    }

    /// The answer with its deferred work done, on the calling thread.
    package func settled() -> HTTPAnswer { deferred?() ?? self }
}
