// What a product built on Homeport needs comes with `import HomeportServer` alone: requests and
// responses, the storage layer its migrations and queries use, the logger, and the wire types.
@_exported import HomeportHTTP
@_exported import HomeportLogging
@_exported import HomeportStorage
