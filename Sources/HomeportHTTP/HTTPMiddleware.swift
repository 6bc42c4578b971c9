/// Per-request state that middleware fills in and handlers read, such as who is calling.
///
/// The server makes an empty one for every request before any middleware runs.
package protocol HTTPRequestContext: Sendable {
    /// An empty context.
    init()
}

/// A context with nothing in it, for routers whose handlers need none.
package struct EmptyRequestContext: HTTPRequestContext {
    /// Creates the context.
    package init() {}
}

/// A request handler: synchronous, run on one of the server's worker threads.
///
/// Throw ``HTTPError`` to answer with a specific status; any other error answers 500
/// and is logged without the request's credentials.
package typealias HTTPHandler<Context: HTTPRequestContext> = @Sendable (HTTPRequest, Context) throws -> HTTPResponse

/// A step every request of a route group passes through before its handler: it may read the
/// request, fill in the context, answer by itself, or change the answer on its way out.
package protocol HTTPMiddleware<Context>: Sendable {
    /// The request context the middleware works with.
    associatedtype Context: HTTPRequestContext

    /// Handles `request`; `next` runs the rest of the chain (the handler last).
    func handle(
        _ request: HTTPRequest, context: Context, next: (HTTPRequest, Context) throws -> HTTPResponse
    ) throws -> HTTPResponse
}

/// Sets `Cache-Control: no-store` on every answer of its group, errors included.
package struct NoStoreMiddleware<Context: HTTPRequestContext>: HTTPMiddleware {
    /// Creates the middleware.
    package init() {}

    /// Runs the rest of the chain and marks its answer not to be stored.
    package func handle(
        _ request: HTTPRequest, context: Context, next: (HTTPRequest, Context) throws -> HTTPResponse
    ) throws -> HTTPResponse {
        var response: HTTPResponse
        do {
            response = try next(request, context)
        } catch let error as HTTPError {
            response = error.response
        }
        response.headers.set("Cache-Control", "no-store")
        return response
    }
}

extension Array {
    /// The handler wrapped in these middleware, the first outermost.
    func wrapping<Context>(_ handler: @escaping HTTPHandler<Context>) -> HTTPHandler<Context>
    where Element == any HTTPMiddleware<Context> {
        reversed().reduce(handler) { next, middleware in
            { request, context in try middleware.handle(request, context: context, next: next) }
        }
    }
}
