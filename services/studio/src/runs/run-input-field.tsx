import { useId } from 'react';
import type { FieldValue, FormField } from './input-form';

/** One input of the run form, its widget chosen by the input's connector. */
export function InputField({
  field,
  value,
  error,
  uploading,
  disabled,
  onChange,
  onFile,
}: {
  field: FormField;
  value: FieldValue;
  error: string | undefined;
  uploading: boolean;
  disabled: boolean;
  onChange(value: FieldValue): void;
  onFile(file: File): void;
}) {
  const id = useId();
  const errorId = `${id}-error`;
  const described = error ? errorId : undefined;
  const title = (
    <span>
      {field.label}
      {field.required ? <span className="required" aria-label="required"> *</span> : null} <span className="hint">{field.connector.toLowerCase()}</span>
    </span>
  );
  const errorLine = error ? (
    <span id={errorId} className="error-text small">
      {error}
    </span>
  ) : null;

  if (value.widget === 'switch') {
    return (
      <div className="field">
        <label className="switch-row">
          <input type="checkbox" role="switch" checked={value.checked} disabled={disabled} onChange={(e) => onChange({ widget: 'switch', checked: e.target.checked })} aria-describedby={described} />
          {title}
        </label>
        {errorLine}
      </div>
    );
  }
  if (value.widget === 'file') {
    const accept = field.connector === 'IMAGE' ? 'image/*' : field.connector === 'AUDIO' ? 'audio/*' : field.connector === 'VIDEO' ? 'video/*' : undefined;
    return (
      <fieldset className="field file-field" disabled={disabled}>
        <legend>{title}</legend>
        <div className="segmented" role="radiogroup" aria-label={`${field.label}: source`}>
          {(['upload', 'url'] as const).map((mode) => (
            <label key={mode} className={value.mode === mode ? 'on' : ''}>
              <input type="radio" name={`${id}-mode`} checked={value.mode === mode} onChange={() => onChange({ ...value, mode })} />
              {mode === 'upload' ? 'Upload a file' : 'From a URL'}
            </label>
          ))}
        </div>
        {value.mode === 'upload' ? (
          <div className="row">
            <input
              type="file"
              accept={accept}
              aria-label={`${field.label}: file`}
              aria-invalid={!!error}
              aria-describedby={described}
              onChange={(e) => {
                const file = e.target.files?.[0];
                if (file) onFile(file);
              }}
            />
            {uploading && <span className="muted small">Uploading…</span>}
            {!uploading && value.artifact && <span className="ok-text small">Uploaded {value.fileName}</span>}
          </div>
        ) : (
          <input
            type="url"
            placeholder="https://…"
            aria-label={`${field.label}: URL`}
            value={value.url}
            aria-invalid={!!error}
            aria-describedby={described}
            onChange={(e) => onChange({ ...value, url: e.target.value })}
          />
        )}
        {!field.required && <span className="hint small">Optional: the node's default is used when left empty.</span>}
        {errorLine}
      </fieldset>
    );
  }
  const common = {
    value: value.text,
    disabled,
    required: field.required,
    'aria-invalid': !!error,
    'aria-describedby': described,
  };
  return (
    <label className="field">
      {title}
      {value.widget === 'textarea' || value.widget === 'json' ? (
        <textarea
          {...common}
          rows={value.widget === 'json' ? 5 : 3}
          className={value.widget === 'json' ? 'mono' : undefined}
          spellCheck={value.widget !== 'json'}
          onChange={(e) => onChange({ widget: value.widget, text: e.target.value })}
        />
      ) : (
        <input
          {...common}
          type={value.widget === 'integer' || value.widget === 'number' ? 'number' : 'text'}
          step={value.widget === 'integer' ? 1 : value.widget === 'number' ? 'any' : undefined}
          inputMode={value.widget === 'integer' ? 'numeric' : value.widget === 'number' ? 'decimal' : undefined}
          onChange={(e) => onChange({ widget: value.widget, text: e.target.value })}
        />
      )}
      {errorLine}
    </label>
  );
}
