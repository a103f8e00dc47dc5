"""The UI's scripts, served from ``/static/`` (the CSP allows scripts only from there)."""

from __future__ import annotations

from touchstone_ray.doc import REPORT_JS

OVERVIEW_JS = """
(function(){
var box=document.getElementById('groups');if(!box)return;
function refresh(){fetch('/fragment/overview'+location.search,{credentials:'same-origin'})
.then(function(r){return r.ok?r.text():null;})
.then(function(t){if(t!==null&&t!==box.innerHTML)box.innerHTML=t;}).catch(function(){});}
setInterval(refresh,3000);
})();
"""
"""Re-fetches the overview tables every 3 s, so new bundles appear without a reload."""

LIVE_JS = """
(function(){
var box=document.getElementById('live');if(!box)return;
var src=new EventSource(box.getAttribute('data-events'));
src.addEventListener('update',function(ev){box.innerHTML=JSON.parse(ev.data).html;});
src.addEventListener('end',function(ev){box.innerHTML=JSON.parse(ev.data).html;src.close();});
})();
"""
"""Replaces the live cards with each ``update`` event; ``end`` closes the stream."""

JOB_JS = """
(function(){
var box=document.getElementById('job');if(!box)return;
var src=new EventSource(box.getAttribute('data-events'));
function show(ev){var d=JSON.parse(ev.data);
document.getElementById('job-status').textContent=d.status;
document.getElementById('job-log').textContent=d.logs;}
src.addEventListener('update',show);
src.addEventListener('end',function(ev){show(ev);src.close();});
})();
"""
"""Shows a job's status and log text from each event (``textContent``: logs stay text)."""

QUEUE_JS = """
(function(){
var box=document.getElementById('queue');if(!box)return;
function refresh(){fetch(box.getAttribute('data-fragment'),{credentials:'same-origin'})
.then(function(r){return r.ok?r.text():null;})
.then(function(t){if(t!==null&&t!==box.innerHTML)box.innerHTML=t;}).catch(function(){});}
setInterval(refresh,1000);
var form=document.getElementById('queue-add');if(!form)return;
var pack=form.querySelector('[name=pack]'),config=form.querySelector('[name=config]');
var note=document.getElementById('queue-choices-error'),timer=null,last='';
function boxes(id,name,values){var set=document.getElementById(id);
while(set.children.length>1)set.removeChild(set.lastChild);
values.forEach(function(v){var l=document.createElement('label'),c=document.createElement('input');
c.type='checkbox';c.name=name;c.value=v;c.checked=true;l.appendChild(c);
l.appendChild(document.createTextNode(' '+v+' '));set.appendChild(l);});}
function load(){if(!pack.value||!config.value)return;
var q='?pack='+encodeURIComponent(pack.value)+'&config='+encodeURIComponent(config.value);
if(q===last)return;last=q;
fetch('/queue/choices'+q,{credentials:'same-origin'}).then(function(r){return r.json();})
.then(function(d){note.textContent=d.error||'';boxes('queue-models','models',d.models||[]);
boxes('queue-variants','variants',d.variants||[]);}).catch(function(){});}
function later(){clearTimeout(timer);timer=setTimeout(load,300);}
pack.addEventListener('change',later);config.addEventListener('input',later);
config.addEventListener('change',later);
})();
"""
"""The Queue page: re-fetches the entry table every second; fills the add form's model and
variant checkboxes (all checked) from ``/queue/choices`` once a pack and a config are named."""

START_JS = """
(function(){
var form=document.getElementById('start-eval');if(!form)return;
var T=JSON.parse(form.getAttribute('data-labels'));
var pack=form.querySelector('[name=pack]'),config=form.querySelector('[name=config]');
var note=document.getElementById('start-error'),cmd=document.getElementById('start-command');
var state=document.getElementById('preflight-state');
var problems=document.getElementById('preflight-problems');
var lastChoices='',lastConfig='',poll=null,timer=null,seq=0;
function get(url){return fetch(url,{credentials:'same-origin'})
.then(function(r){return r.json();});}
function clear(id){var set=document.getElementById(id);
while(set.children.length>1)set.removeChild(set.lastChild);return set;}
function tick(set,name,value,text){var row=document.createElement('div'),
l=document.createElement('label'),
c=document.createElement('input');row.className='choice';row.setAttribute('data-value',value);
c.type='checkbox';c.name=name;c.value=value;c.checked=true;c.addEventListener('change',later);
l.appendChild(c);l.appendChild(document.createTextNode(' '+text));row.appendChild(l);
var s=document.createElement('span');s.className='served muted';
row.appendChild(document.createTextNode(' '));
row.appendChild(s);set.appendChild(row);}
function picked(on){var p=form.querySelector('[name=picked]');
if(on&&!p){p=document.createElement('input');p.type='hidden';p.name='picked';p.value='1';form.appendChild(p);}
if(!on&&p)p.parentNode.removeChild(p);}
function plan(){var q=new URLSearchParams(new FormData(form)).toString(),mine=++seq;
get('/jobs/plan?'+q).then(function(d){if(mine!==seq)return;
cmd.textContent=d.command||'';note.textContent=d.error||'';}).catch(function(){});}
function fill(d){Object.keys(d.models||{}).forEach(function(label){
var row=document.querySelector('#start-models .choice[data-value="'+CSS.escape(label)+'"] .served');
if(!row)return;var m=d.models[label],served=(m.served||[]).join(', ')||'—';
row.className='served '+(m.reachable&&m.model_served!==false?'ok':'err');
row.textContent=!m.reachable?T.unreachable.replace('{error}',m.error||''):
m.model_served===false?T.not_served.replace('{served}',served):
(m.served||[]).length?T.serves.replace('{served}',served):T.serves_none;});
while(problems.firstChild)problems.removeChild(problems.firstChild);
(d.problems||[]).forEach(function(p){var li=document.createElement('li');li.textContent=p;
problems.appendChild(li);});}
function watch(job){clearTimeout(poll);
get('/jobs/preflight/'+encodeURIComponent(job)).then(function(d){
if(Object.keys(d.models||{}).length){fill(d);state.textContent=T.preflight_job+': '+d.status;}
if(d.error){state.textContent=T.preflight_job+': '+d.error;}
if(!d.error&&(d.status==='PENDING'||d.status==='RUNNING'))
poll=setTimeout(function(){watch(job);},1000);
}).catch(function(){poll=setTimeout(function(){watch(job);},2000);});}
function preflight(){if(config.value===lastConfig)return;lastConfig=config.value;clearTimeout(poll);
state.textContent=T.preflight_running;
fetch('/jobs/preflight',{method:'POST',credentials:'same-origin',
body:new URLSearchParams({config:config.value})}).then(function(r){return r.json();})
.then(function(d){if(d.error){state.textContent=d.error;return;}
state.setAttribute('data-job',d.job);watch(d.job);}).catch(function(){});}
function load(){if(!pack.value||!config.value){seq++;cmd.textContent='';note.textContent='';
return;}
var q='?pack='+encodeURIComponent(pack.value)+'&config='+encodeURIComponent(config.value);
if(q===lastChoices){plan();return;}lastChoices=q;
get('/jobs/choices'+q).then(function(d){var ms=clear('start-models'),vs=clear('start-variants');
if(d.error){picked(false);lastConfig='';state.textContent='';plan();return;}
(d.models||[]).forEach(function(m){
tick(ms,'models',m.label,m.label+' ('+m.host+', '+m.engine+')');});
(d.variants||[]).forEach(function(v){tick(vs,'variants',v,v);});
picked(true);plan();preflight();}).catch(function(){});}
function later(){clearTimeout(timer);timer=setTimeout(load,250);}
[pack,config,form.querySelector('[name=limit]'),form.querySelector('[name=judge_config]')]
.forEach(function(el){el.addEventListener('input',later);el.addEventListener('change',later);});
form.addEventListener('submit',function(ev){if(form.getAttribute('data-checked'))return;
ev.preventDefault();var q=new URLSearchParams(new FormData(form)).toString();
get('/jobs/plan?'+q).then(function(d){if(d.error){note.textContent=d.error;return;}
form.setAttribute('data-checked','1');form.submit();}).catch(function(){form.submit();});});
load();
})();
"""
"""The Jobs page's eval form: once a pack and a fleet config are named, fills the model (with
host and engine) and variant checkboxes (all ticked) from ``/jobs/choices``, starts the hosts
preflight job for that config and writes what each endpoint serves beside its model, and keeps
the exact command (``/jobs/plan``, the submission's own) or the one line that refuses it under
the form; a submission the plan refuses is not sent (the line stays; the server refuses it
too, for a client without this script)."""

SCRIPTS = {
    "overview.js": OVERVIEW_JS,
    "live.js": LIVE_JS,
    "report.js": REPORT_JS,
    "job.js": JOB_JS,
    "queue.js": QUEUE_JS,
    "start.js": START_JS,
}
"""File name under ``/static/`` → script text."""
