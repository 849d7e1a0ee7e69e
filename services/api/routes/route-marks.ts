import type { NextFunction, Request, Response, Router } from 'express';

/** Sets the route's label for logs and metrics (`res.locals.route`). */
export function routeLabel(pattern: string) {
  return (_req: Request, res: Response, next: NextFunction): void => {
    res.locals.route = pattern;
    next();
  };
}

/**
 * Marks a path as served with `methods` only: another method on it reaches the app's
 * `methodNotAllowed`, which answers 405 with `Allow`. Mount after the path's routes.
 */
export function allowOnly(router: Router, path: string, methods: readonly string[]): void {
  router.all(path, (_req: Request, res: Response, next: NextFunction) => {
    res.locals.route = path;
    res.locals.allowedMethods = [...methods];
    next();
  });
}
