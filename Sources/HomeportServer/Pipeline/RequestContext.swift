import HomeportHTTP

/// What the server's middleware learn about a request and hand to its handler.
struct RequestContext: HTTPRequestContext {
    /// Who is calling, read once by the session middleware of the route's group.
    var caller: Caller = .none
    /// The CSRF token the web door's forms carry (set by ``CSRFMiddleware``).
    var csrfToken = ""

    init() {}
}

/// The server's router: every handler gets the request and its ``RequestContext``.
typealias ServerRouter = Router<RequestContext>
