// Package service is what every boxoffice service binary shares: a
// configuration struct filled from environment variables with defaults
// ([Load], [Common]) and logged with secrets masked ([Fields]); a zap logger
// ([NewLogger]) and a request or message id carried in the context
// ([WithRequestID], [LoggerFrom]); a Redis client for one node or a cluster
// ([NewRedis]); the admin listener with /metrics, /healthz and /readyz
// ([NewAdmin]); HTTP metrics usable from net/http or gin ([HTTPMetrics]); and
// the process skeleton ([Main], [RunAll], [ServeHTTP]) that turns SIGINT and
// SIGTERM into a cancelled context and a graceful, bounded shutdown.
//
// A service's main is thin:
//
//	func main() { service.Main("gateway", run) }
//
//	func run(ctx context.Context, log *zap.Logger) error {
//		cfg := Config{Common: service.Common{AdminAddr: service.DefaultAdminAddr("gateway")}}
//		if err := service.Load(&cfg); err != nil {
//			return err
//		}
//		log.Info("config", service.Fields(cfg)...)
//		...
//		return service.RunAll(ctx, admin.Run, func(ctx context.Context) error {
//			return service.ServeHTTP(ctx, srv, cfg.ShutdownTimeout)
//		})
//	}
package service
