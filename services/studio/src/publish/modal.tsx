import { useCallback, useEffect, useId, useRef, useState, type ReactNode } from 'react';
import { errorText } from '../lib/api';

const FOCUSABLE = 'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

export interface ModalProps {
  title: ReactNode;
  onClose(): void;
  children: ReactNode;
  /** Extra class on the dialog box (width variants). */
  className?: string;
  /** Role `alertdialog` for confirmations. */
  alert?: boolean;
  /** What Esc and a click on the backdrop do; default onClose. Pass null while busy to keep it open. */
  dismiss?: (() => void) | null;
}

/**
 * A modal dialog: focus moves into it and stays there (Tab wraps), Esc closes it, focus returns
 * to what had it before. The first field marked `autoFocus`/`data-autofocus` gets focus, else the
 * first focusable element.
 */
export function Modal({ title, onClose, children, className, alert, dismiss }: ModalProps) {
  const box = useRef<HTMLDivElement>(null);
  const titleId = useId();
  const onDismiss = dismiss === undefined ? onClose : dismiss;
  const dismissRef = useRef(onDismiss);
  dismissRef.current = onDismiss;

  useEffect(() => {
    const before = document.activeElement as HTMLElement | null;
    const el = box.current;
    if (el && !el.contains(document.activeElement)) {
      const first = el.querySelector<HTMLElement>('[data-autofocus]') ?? el.querySelector<HTMLElement>(FOCUSABLE);
      (first ?? el).focus();
    }
    return () => {
      if (before && document.contains(before)) before.focus();
    };
  }, []);

  const onKeyDown = (event: React.KeyboardEvent) => {
    if (event.key === 'Escape') {
      event.stopPropagation();
      dismissRef.current?.();
      return;
    }
    if (event.key !== 'Tab' || !box.current) return;
    event.stopPropagation();
    const items = [...box.current.querySelectorAll<HTMLElement>(FOCUSABLE)].filter((e) => !e.closest('[hidden], details:not([open]) > :not(summary)'));
    if (items.length === 0) {
      event.preventDefault();
      return;
    }
    const first = items[0]!;
    const last = items[items.length - 1]!;
    if (event.shiftKey && (document.activeElement === first || document.activeElement === box.current)) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    }
  };

  return (
    <div
      className="dialog-backdrop"
      onMouseDown={(e) => {
        if (e.target === e.currentTarget) dismissRef.current?.();
      }}
    >
      <div
        ref={box}
        className={`dialog${className ? ` ${className}` : ''}`}
        role={alert ? 'alertdialog' : 'dialog'}
        aria-modal="true"
        aria-labelledby={titleId}
        tabIndex={-1}
        onKeyDown={onKeyDown}
      >
        <h2 id={titleId}>{title}</h2>
        {children}
      </div>
    </div>
  );
}

/**
 * The one action of a dialog: whether it is under way, and why it failed in the service's words.
 * `run` clears the last problem, then runs the work; a failure keeps the dialog open to try again
 * (on success the dialog is closed by its owner, so it stays busy).
 */
export function useDialogAction(): { busy: boolean; problem: string | null; setProblem(problem: string | null): void; run(work: () => Promise<void>): Promise<void> } {
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const run = useCallback(async (work: () => Promise<void>) => {
    setBusy(true);
    setProblem(null);
    try {
      await work();
    } catch (err) {
      setProblem(errorText(err));
      setBusy(false);
    }
  }, []);
  return { busy, problem, setProblem, run };
}

export interface DialogActionsProps {
  problem: string | null;
  busy: boolean;
  onCancel(): void;
  /** The action's label, and its label while under way ("Revoke", "Revoking…"). */
  label: string;
  busyLabel: string;
  tone?: 'primary' | 'danger';
  /** A button's action; without it the action submits the dialog's form. */
  onConfirm?: () => void;
  /** The action is not possible yet (a confirmation not typed). */
  disabled?: boolean;
  /** Which button takes focus when the dialog opens: the action, or Cancel for destructive ones. */
  focus?: 'action' | 'cancel';
}

/** The foot of a dialog: what went wrong, Cancel, and the action. */
export function DialogActions({ problem, busy, onCancel, label, busyLabel, tone = 'primary', onConfirm, disabled, focus }: DialogActionsProps) {
  return (
    <>
      {problem && (
        <p className="error-text" role="alert">
          {problem}
        </p>
      )}
      <div className="actions">
        <button type="button" className="button" onClick={onCancel} disabled={busy} data-autofocus={focus === 'cancel' ? true : undefined}>
          Cancel
        </button>
        <button
          type={onConfirm ? 'button' : 'submit'}
          className={tone === 'danger' ? 'button danger solid' : 'button primary'}
          onClick={onConfirm}
          disabled={busy || disabled}
          data-autofocus={focus === 'action' ? true : undefined}
        >
          {busy ? busyLabel : label}
        </button>
      </div>
    </>
  );
}
